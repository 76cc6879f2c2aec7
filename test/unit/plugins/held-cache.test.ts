// The held lists a process keeps between mobile-sync rounds: bounded by items kept across all
// collections (the least recently kept go first), handed out once, and only for the version of the
// collection the round that kept them wrote.
import { describe, expect, it } from 'vitest';
import { HeldCache, HeldItems } from '../../../lib/plugins/held-items.js';

const list = (collectionUid: string, n: number) =>
  HeldItems.of(collectionUid, [
    {
      uid: `chunk-${collectionUid}`,
      version: 1,
      collectionUid,
      seq: 0,
      items: Object.fromEntries(Array.from({ length: n }, (_, i) => [`i${i}`, '1'])),
    },
  ]);

describe('HeldCache', () => {
  it('hands a list out once, and only for the version it was kept with', () => {
    const cache = new HeldCache(100);
    const a = list('a', 10);
    cache.keep('a', 3, a);
    expect(cache.take('a', 2)).toBeUndefined(); // another version: not used, and gone
    expect(cache.take('a', 3)).toBeUndefined();
    cache.keep('a', 3, a);
    expect(cache.take('a', 3)).toBe(a);
    expect(cache.take('a', 3)).toBeUndefined();
    expect(cache.size).toEqual({ collections: 0, items: 0 });
  });

  it('keeps at most maxItems items: the least recently kept lists go first; a list larger than that is not kept', () => {
    const cache = new HeldCache(100);
    cache.keep('a', 1, list('a', 40));
    cache.keep('b', 1, list('b', 40));
    cache.keep('a', 2, list('a', 40)); // kept again: now the most recent
    expect(cache.size).toEqual({ collections: 2, items: 80 });
    cache.keep('c', 1, list('c', 40));
    expect(cache.size).toEqual({ collections: 2, items: 80 });
    expect(cache.take('b', 1)).toBeUndefined();
    expect(cache.take('a', 2)).toBeDefined();
    cache.keep('huge', 1, list('huge', 101));
    expect(cache.take('huge', 1)).toBeUndefined();
    // Not a list read by the device-state API (a plain map), or kept under another collection: not kept.
    cache.keep('d', 1, new Map([['x', '1']]));
    cache.keep('e', 1, list('not-e', 1));
    expect(cache.size).toEqual({ collections: 1, items: 40 });
  });
});
