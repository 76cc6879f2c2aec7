// The administration console (/admin): one view at a time, chosen by the address's #fragment.
// Everything here is administration only — the API never gives an administrator anyone's mail.
import '../styles/svcmail.css';
import '../styles/settings.css';
import '../styles/admin.css';
import { createRoot } from 'react-dom/client';
import { startSession } from '../shared/session.js';
import { Console } from './Console.js';

createRoot(document.getElementById('app')!).render(<Console />);

startSession();
