import { lazy, Suspense, useEffect, useState } from 'react';
import type { PimViewName } from '../pim/index.js';
import type { Mailbox } from './types.js';

// The app's views — mail and the personal-information ones — chosen by the address's #fragment
// (#calendar…; a reload stays there, Back goes to the last view). The PIM views load when first shown.

const PimView = lazy(() => import('../pim/index.js'));
export type ViewName = 'mail' | PimViewName;
const VIEWS: Array<[ViewName, string]> = [
  ['mail', 'Mail'],
  ['calendar', 'Calendar'],
  ['contacts', 'Contacts'],
  ['tasks', 'Tasks'],
  ['notes', 'Notes'],
];
const viewOf = (hash: string): ViewName => VIEWS.find(([v]) => `#${v}` === hash)?.[0] ?? 'mail';

/** The view the address names, following it as it changes. */
export function useView(): ViewName {
  const [view, setView] = useState(() => viewOf(location.hash));
  useEffect(() => {
    const follow = () => setView(viewOf(location.hash));
    addEventListener('hashchange', follow);
    return () => removeEventListener('hashchange', follow);
  }, []);
  return view;
}

/** Links to the views; the current one marked. */
export function ViewLinks({ view }: { view: ViewName }) {
  return (
    <nav aria-label="Views" className="views">
      {VIEWS.map(([v, label]) => (
        <a key={v} href={v === 'mail' ? '#' : `#${v}`} aria-current={v === view ? 'page' : undefined}>
          {label}
        </a>
      ))}
    </nav>
  );
}

/** A personal-information view of the mailbox, loaded on first use. */
export function Pim({ view, box }: { view: PimViewName; box: Mailbox }) {
  return (
    <Suspense fallback={<p className="muted">Loading…</p>}>
      <PimView view={view} box={box} />
    </Suspense>
  );
}
