// Several messages picked in the list (no DOM: unit-tested in test/unit/web/selection.test.ts):
// Ctrl/⌘-click or x toggles one, Shift-click picks the rows between the last one picked and this one.

export interface Picks {
  uids: ReadonlySet<string>;
  /** The row index the last toggle was at: where a range starts. */
  anchor: number | null;
}

export const NO_PICKS: Picks = { uids: new Set(), anchor: null };

/** The picks with row `index` (message `uid`) toggled. */
export function toggle(p: Picks, uid: string, index: number): Picks {
  const uids = new Set(p.uids);
  if (uids.has(uid)) uids.delete(uid);
  else uids.add(uid);
  return { uids, anchor: index };
}

/** The picks with every row from the anchor to `index` added (`uidAt` answers the rows that are loaded). */
export function range(p: Picks, index: number, uidAt: (i: number) => string | undefined): Picks {
  const from = p.anchor ?? index;
  const uids = new Set(p.uids);
  for (let i = Math.min(from, index); i <= Math.max(from, index); i++) {
    const uid = uidAt(i);
    if (uid) uids.add(uid);
  }
  return { uids, anchor: p.anchor ?? index };
}

/** The picks still in the list after messages left it (moved, deleted). */
export const without = (p: Picks, gone: Iterable<string>): Picks => {
  const uids = new Set(p.uids);
  for (const uid of gone) uids.delete(uid);
  return { uids, anchor: uids.size ? p.anchor : null };
};
