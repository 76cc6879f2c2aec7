// The key escrow console (/escrow): scopes, matters, access requests with each holder's decision,
// matter exports, the escrow audit log — and the investigation, where the matter's mail is decrypted
// in this browser with the scope key, which is never uploaded.
import '../styles/svcmail.css';
import '../styles/settings.css';
import '../styles/admin.css';
import { lazy } from 'react';
import { createRoot } from 'react-dom/client';
import { ConsoleShell, type ConsoleView } from '../shared/ConsoleShell.js';
import { startSession } from '../shared/session.js';
import { Requests } from './Requests.js';

const VIEWS: ConsoleView[] = [
  ['requests', 'Access requests', Requests],
  ['investigate', 'Investigate', lazy(() => import('./Investigate.js'))],
  ['matters', 'Matters', lazy(() => import('./Matters.js'))],
  ['scopes', 'Scopes', lazy(() => import('./Scopes.js'))],
  ['exports', 'Matter exports', lazy(() => import('./Exports.js'))],
  ['audit', 'Escrow audit log', lazy(() => import('./Audit.js'))],
];

createRoot(document.getElementById('app')!).render(<ConsoleShell label="Escrow views" views={VIEWS} />);

startSession();
