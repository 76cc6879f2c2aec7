// The document adapter's query documents (lib/storage/document/translate.ts) evaluated by mingo
// against the records SQLite answers for the same port query: filters, operators, NULL, dates,
// value indexes, sorts with ties, paging, full-text words and claims. See _document.ts.
import fc from 'fast-check';
import { Query } from 'mingo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Filter, ListQuery } from '../../../lib/storage/index.js';
import { and, filterOf, leaseOver, sortOf, wordsFilter } from '../../../lib/storage/document/translate.js';
import { mingoList, pair, textOf, Thing, type Pair } from './_document.js';

let p: Pair;
beforeAll(async () => {
  p = await pair();
});
afterAll(async () => p?.store.close());

const uids = async (q: ListQuery) => (await p.repo.list(q)).map((r) => r.uid);
const same = async (q: ListQuery) => expect(mingoList(Thing, p.docs, q)).toEqual(await uids(q));
const bySize: ListQuery['sort'] = [{ field: 'size', dir: 'asc' }];

describe('document adapter: filters as SQLite answers them', () => {
  const cases: Array<[string, Filter]> = [
    ['equality on text', { owner: 'o1' }],
    ['equality on the empty string', { owner: '' }],
    ['equality on an integer', { size: 4 }],
    ['equality on a boolean', { flagged: true }],
    ['equality on a date', { seenAt: new Date(Date.UTC(2026, 0, 3, 2)) }],
    ['a date given as text', { seenAt: { $gte: '2026-01-05T00:00:00.000Z' } }],
    ['null', { score: null }],
    ['not null', { score: { $ne: null } }],
    ['not equal (NULL kept, as SQL keeps it)', { score: { $ne: 1 } }],
    ['$in', { owner: { $in: ['o2', 'Z', 'nobody'] } }],
    ['$in with a null (NULL never equals)', { score: { $in: [null, 0.5] } }],
    ['empty $in', { size: { $in: [] } }],
    ['$nin (NULL left out, as SQL leaves it out)', { score: { $nin: [0.5, 1] } }],
    ['empty $nin', { score: { $nin: [] } }],
    ['$nin with a null (nothing, as in SQL)', { score: { $nin: [null, 1] } }],
    ['a range', { size: { $gt: -2, $lte: 5 } }],
    ['a range on a nullable number', { score: { $lt: 1.5 } }],
    ['a comparison with null (never true)', { score: { $gte: null } }],
    ['a text range in byte order', { owner: { $gte: 'Z', $lt: 'é' } }],
    ['a date range', { seenAt: { $gt: new Date(Date.UTC(2026, 0, 2)), $lt: new Date(Date.UTC(2026, 0, 7)) } }],
    ['uid', { uid: { $gte: '0' } }],
    ['lease fields', { claimedBy: null, leaseUntil: null }],
    ['several fields', { owner: 'o2', flagged: false, size: { $gte: 0 } }],
    ['value index $has', { labels: { $has: 'beta' } }],
    ['value index $has with its scope', { labels: { $has: 'café' }, owner: 'a' }],
    ['value index $prefix', { rcpt: { $prefix: 'o1user' } }],
    ['value index $prefix across one value only (not two)', { rcpt: { $prefix: 'zuser3@' } }],
    ['value index $prefix, empty (any value)', { labels: { $prefix: '' } }],
    ['value index $prefix of non-ASCII', { labels: { $prefix: 'é' } }],
    ['two value indexes and a field', { labels: { $prefix: 'al' }, rcpt: { $has: 'o2user2@example.test' }, flagged: false }],
  ];
  it.each(cases)('%s', async (_name, filter) => {
    await same({ filter, sort: bySize });
  });

  it('refuses what SQL refuses: unknown fields, JSON fields, a value index used as a field', () => {
    expect(() => filterOf(Thing, { nope: 1 })).toThrow(/cannot filter/);
    expect(() => filterOf(Thing, { tags: 'x' })).toThrow(/cannot filter/);
    expect(() => filterOf(Thing, { labels: 'x' })).toThrow(/value index/);
    expect(() => sortOf(Thing, [{ field: 'to', dir: 'asc' }])).toThrow(/cannot filter or sort/);
  });

  it('random filters of every operator answer the same records (fast-check)', async () => {
    const scalar = {
      owner: fc.constantFrom('o1', 'o2', 'Z', 'a', 'é', '', 'none'),
      size: fc.integer({ min: -4, max: 8 }),
      score: fc.constantFrom(null, 0, 0.5, 1, 1.5, 2),
      flagged: fc.boolean(),
    };
    const cond = (field: keyof typeof scalar) =>
      fc.oneof(
        scalar[field] as fc.Arbitrary<unknown>,
        fc.record({ $in: fc.array(scalar[field] as fc.Arbitrary<unknown>, { maxLength: 3 }) }),
        fc.record({ $nin: fc.array(scalar[field] as fc.Arbitrary<unknown>, { maxLength: 3 }) }),
        fc.record({ $ne: scalar[field] as fc.Arbitrary<unknown> }),
        fc.record({ $gte: scalar[field] as fc.Arbitrary<unknown>, $lt: scalar[field] as fc.Arbitrary<unknown> }, { requiredKeys: [] }),
      );
    const filter = fc.record(
      {
        owner: cond('owner'),
        size: cond('size'),
        score: cond('score'),
        flagged: cond('flagged'),
        labels: fc.oneof(
          fc.record({ $has: fc.constantFrom('beta', 'zeta', 'x1') }),
          fc.record({ $prefix: fc.constantFrom('', 'a', 'x', 'é') }),
        ),
      },
      { requiredKeys: [] },
    );
    const sort = fc.constantFrom<ListQuery['sort']>(
      undefined,
      [{ field: 'score', dir: 'desc' }],
      [{ field: 'seenAt', dir: 'asc' }],
      [
        { field: 'flagged', dir: 'asc' },
        { field: 'name', dir: 'desc' },
      ],
    );
    await fc.assert(
      fc.asyncProperty(filter, sort, fc.nat(20), fc.integer({ min: 1, max: 50 }), async (f, s, offset, limit) => {
        // An empty range ({}) is not a condition the port knows: leave the field out.
        const clean = Object.fromEntries(Object.entries(f).filter(([, c]) => !(c && typeof c === 'object' && !Object.keys(c).length)));
        const q = { filter: clean as Filter, sort: s, offset, limit };
        expect(mingoList(Thing, p.docs, q)).toEqual(await uids(q));
      }),
      { numRuns: 300 },
    );
  });
});

describe('document adapter: order and paging as SQLite answers them', () => {
  it.each([
    ['a nullable number, NULLs first as SQLite sorts them', [{ field: 'score', dir: 'asc' }]],
    ['a nullable number descending', [{ field: 'score', dir: 'desc' }]],
    ['a nullable date', [{ field: 'seenAt', dir: 'asc' }]],
    ['text in byte order', [{ field: 'owner', dir: 'asc' }]],
    [
      'two keys, ties broken by uid in the first key’s direction',
      [
        { field: 'flagged', dir: 'desc' },
        { field: 'size', dir: 'asc' },
      ],
    ],
    ['uid alone', [{ field: 'uid', dir: 'desc' }]],
    ['no sort', undefined],
  ] as Array<[string, ListQuery['sort']]>)('%s', async (_name, sort) => {
    await same({ sort });
    await same({ sort, limit: 7, offset: 30 });
    await same({ filter: { owner: 'o2' }, sort, offset: 3 });
  });
});

describe('document adapter: full-text words', () => {
  const searchUids = async (text: string, q: ListQuery = {}) => (await p.repo.search(text, q)).map((r) => r.uid);
  it.each([
    ['one word', 'quarterly'],
    ['case', 'QUARTERLY Report'],
    ['a prefix', 'alp'],
    ['diacritics either way', 'cafe'],
    ['diacritics in the query', 'ÉLAN'],
    ['an address, as its parts', 'mail2@host1.example'],
    ['every word must be there', 'zeta r5'],
    ['a number prefix', 'n1'],
    ['non-Latin', '中文'],
    ['no such word', 'walrus'],
  ])('%s', async (_name, text) => {
    const words = wordsFilter(text)!;
    const q: ListQuery = { sort: [{ field: 'size', dir: 'asc' }] };
    expect(mingoList(Thing, p.docs, q, words)).toEqual(await searchUids(text, q));
    const narrowed: ListQuery = { filter: { flagged: true }, sort: [{ field: 'name', dir: 'desc' }], limit: 5, offset: 1 };
    expect(mingoList(Thing, p.docs, narrowed, words)).toEqual(await searchUids(text, narrowed));
  });

  it('a query without words matches nothing (no condition at all)', async () => {
    expect(wordsFilter('  ;; ')).toBeNull();
    expect(await searchUids('  ;; ')).toEqual([]);
    expect(textOf(0)).toContain('Quarterly');
  });
});

describe('document adapter: claims', () => {
  it('a claim takes the records SQLite takes: unleased or lease over, in the claim order', async () => {
    const now = new Date();
    const { docs } = p;
    // One record leased until later, one whose lease is over.
    const later = docs.find((d) => d.owner === 'o1')!;
    const over = docs.find((d) => d.owner === 'o1' && d !== later)!;
    await p.repo.update(String(later._id), { claimedBy: 'w0', leaseUntil: new Date(now.getTime() + 60_000) } as never);
    await p.repo.update(String(over._id), { claimedBy: 'w0', leaseUntil: new Date(now.getTime() - 60_000) } as never);
    await p.reload();
    const sort = [{ field: 'size', dir: 'desc' as const }];
    const chosen = new Query(and(filterOf(Thing, { owner: 'o1' }), leaseOver(now)))
      .find<{ _id: string }>(p.docs)
      .sort(Object.fromEntries(sortOf(Thing, sort)))
      .limit(6)
      .all()
      .map((d) => d._id);
    const claimed = await p.repo.claim({ owner: 'o1' }, { owner: 'w1', leaseMs: 60_000, limit: 6, sort });
    // The same records (both adapters answer them in byKeys order, whichever order they were taken in).
    expect([...chosen].sort()).toEqual(claimed.map((r) => r.uid).sort());
    expect(chosen).toContain(String(over._id));
    expect(chosen).not.toContain(String(later._id));
  });
});
