import { lazy, Suspense, useEffect, useState, type ComponentType } from 'react';
import { ElevationBar, PendingOffer } from '../shared/Elevation.js';
import { Dashboard } from './Dashboard.js';

/** The console's views: #fragment, title, and the view (each loaded when first shown). */
const VIEWS: Array<[string, string, ComponentType]> = [
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

const viewOf = (hash: string) => VIEWS.find(([id]) => `#${id}` === hash) ?? VIEWS[0];

/** The console: the views' links, the elevation's freshness, a change waiting since the elevation, the view. */
export function Console() {
  const [hash, setHash] = useState(location.hash);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const follow = () => setHash(location.hash);
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  const [id, title, View] = viewOf(hash);
  return (
    <div className="settings console">
      <nav aria-label="Console views" className="settings-nav">
        <ul className="plain">
          {VIEWS.map(([v, label]) => (
            <li key={v}>
              <a href={`#${v}`} aria-current={v === id ? 'page' : undefined}>
                {label}
              </a>
            </li>
          ))}
        </ul>
      </nav>
      <div className="settings-body">
        <ElevationBar />
        <PendingOffer onDone={() => setVersion((v) => v + 1)} />
        <h2 id="view-title">{title}</h2>
        <Suspense fallback={<p className="muted">Loading…</p>}>
          <View key={`${id}-${version}`} />
        </Suspense>
      </div>
    </div>
  );
}
