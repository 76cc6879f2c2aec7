// Picking several messages in the list (web/src/mail/selection.ts).
import { describe, expect, it } from 'vitest';
import { NO_PICKS, range, toggle, without } from '../../../web/src/mail/selection.js';

const rows = ['m0', 'm1', 'm2', 'm3', 'm4', 'm5'];
const uidAt = (i: number) => rows[i];

describe('picking messages', () => {
  it('toggles one row on and off and remembers where', () => {
    const one = toggle(NO_PICKS, 'm2', 2);
    expect([...one.uids]).toEqual(['m2']);
    expect(one.anchor).toBe(2);
    expect([...toggle(one, 'm2', 2).uids]).toEqual([]);
  });

  it('adds the rows between the last toggle and a shift-click, either way, keeping what was picked', () => {
    const p = toggle(toggle(NO_PICKS, 'm0', 0), 'm4', 4);
    expect([...range(p, 2, uidAt).uids].sort()).toEqual(['m0', 'm2', 'm3', 'm4']);
    expect([...range(toggle(NO_PICKS, 'm1', 1), 3, uidAt).uids].sort()).toEqual(['m1', 'm2', 'm3']);
    // with no anchor a shift-click picks just that row; rows not loaded yet are left out
    expect([...range(NO_PICKS, 5, uidAt).uids]).toEqual(['m5']);
    expect([...range(toggle(NO_PICKS, 'm0', 0), 3, (i) => (i === 1 ? undefined : rows[i])).uids].sort()).toEqual(['m0', 'm2', 'm3']);
  });

  it('drops messages that left the list; nothing left forgets the anchor', () => {
    const p = range(toggle(NO_PICKS, 'm1', 1), 3, uidAt);
    expect([...without(p, ['m2']).uids].sort()).toEqual(['m1', 'm3']);
    expect(without(p, ['m1', 'm2', 'm3'])).toEqual({ uids: new Set(), anchor: null });
  });
});
