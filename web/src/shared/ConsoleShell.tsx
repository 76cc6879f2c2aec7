import { Suspense, useEffect, useState, type ComponentType } from 'react';
import { ElevationBar, PendingOffer } from './Elevation.js';

/** A console view: its #fragment, its title, and the view (loaded when first shown where lazy). */
export type ConsoleView = [id: string, title: string, view: ComponentType];

/**
 * The administration and escrow consoles: one view at a time, chosen by the address's #fragment
 * (a reload stays there, Back goes to the last view), beside the views' links; above it the
 * elevation's freshness and a change waiting since the last elevation.
 */
export function ConsoleShell({ label, views }: { label: string; views: ConsoleView[] }) {
  const [hash, setHash] = useState(location.hash);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    const follow = () => setHash(location.hash);
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  // #view, or #view?key=value for a view opened on one record.
  const [id, title, View] = views.find(([v]) => hash.split('?')[0] === `#${v}`) ?? views[0];
  return (
    <div className="settings console">
      <nav aria-label={label} className="settings-nav">
        <ul className="plain">
          {views.map(([v, text]) => (
            <li key={v}>
              <a href={`#${v}`} aria-current={v === id ? 'page' : undefined}>
                {text}
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
