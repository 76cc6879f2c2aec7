import { lazy } from 'react';
import { ConsoleShell, type ConsoleView } from '../shared/ConsoleShell.js';
import { Dashboard } from './Dashboard.js';

/** The administration console's views (each but the dashboard loaded when first shown). */
const VIEWS: ConsoleView[] = [
  ['dashboard', 'Dashboard', Dashboard],
  ['domains', 'Domains and DNS', lazy(() => import('./Domains.js'))],
  ['mailboxes', 'Mailboxes', lazy(() => import('./Mailboxes.js'))],
  ['lists', 'Distribution lists', lazy(() => import('./Lists.js'))],
  ['rules', 'Transport rules', lazy(() => import('./TransportRules.js'))],
  ['quarantine', 'Quarantine', lazy(() => import('./Quarantine.js'))],
  ['ingest', 'Ingest queue', lazy(() => import('./IngestQueue.js'))],
  ['policies', 'Policies', lazy(() => import('./Policies.js'))],
  ['branding', 'Branding', lazy(() => import('./Branding.js'))],
  ['plugins', 'Plugins', lazy(() => import('./Plugins.js'))],
  ['enrolments', 'Signing enrolments', lazy(() => import('./Enrolments.js'))],
  ['requests', 'Exports, imports, erasures', lazy(() => import('./DataRequests.js'))],
  ['devices', 'Mobile devices', lazy(() => import('./Devices.js'))],
  ['impersonation', 'Impersonation', lazy(() => import('./Impersonation.js'))],
  ['audit', 'Audit log', lazy(() => import('./AuditLog.js'))],
];

/** The administration console: administration only — the API never gives an administrator anyone's mail. */
export function Console() {
  return <ConsoleShell label="Console views" views={VIEWS} />;
}
