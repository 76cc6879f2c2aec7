// The web mail app: React, mounted on the page shell lib/web/pages.ts renders.
import '../styles/svcmail.css';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { startSession } from '../shared/session.js';
import { startKeyring } from '../crypto/keyring.js';

createRoot(document.getElementById('app')!).render(<App />);

startSession();
startKeyring();
