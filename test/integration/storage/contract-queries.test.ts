// The Store contract, lists, filters and full-text search: run unchanged against every adapter
// (SQLite, PostgreSQL).
import { describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors/index.js';
import { openStoreOf } from '../../helpers/databases.js';
import { contractStore, Thing, Job, Doc } from './_contract.js';
import { contractBackends } from './_contract.js';

const backends = await contractBackends();

describe.each(backends)('Store contract (queries) on $name', (backend) => {
  const f = contractStore(backend);

  it('lists with filters, operators, sort, limit and offset', async () => {
    for (let i = 0; i < 10; i++)
      await f.things.create({ name: `n${i}`, owner: 'o3', size: i, flagged: i % 2 === 0, tags: [], score: i / 2 });
    const all = await f.things.list({ filter: { owner: 'o3' }, sort: [{ field: 'size', dir: 'desc' }] });
    expect(all.map((t) => t.size)).toEqual([9, 8, 7, 6, 5, 4, 3, 2, 1, 0]);
    const page = await f.things.list({ filter: { owner: 'o3' }, sort: [{ field: 'size', dir: 'asc' }], limit: 3, offset: 3 });
    expect(page.map((t) => t.size)).toEqual([3, 4, 5]);
    expect((await f.things.list({ filter: { owner: 'o3', flagged: true } })).length).toBe(5);
    expect((await f.things.list({ filter: { owner: 'o3', size: { $gte: 7 } } })).length).toBe(3);
    expect((await f.things.list({ filter: { owner: 'o3', size: { $gt: 2, $lt: 5 } } })).map((t) => t.size).sort()).toEqual([3, 4]);
    expect((await f.things.list({ filter: { size: { $in: [1, 2] }, owner: 'o3' } })).length).toBe(2);
    expect((await f.things.list({ filter: { size: { $in: [] } } })).length).toBe(0);
    expect((await f.things.list({ filter: { owner: 'o3', name: { $ne: 'n1' } } })).length).toBe(9);
    expect((await f.things.list({ filter: { owner: 'o3', score: { $lte: 1 } } })).length).toBe(3);
    expect(await f.things.count({ owner: 'o3' })).toBe(10);
    expect(await f.things.count({ owner: 'nobody' })).toBe(0);
  });

  it('filters on null and on dates', async () => {
    const when = new Date('2026-01-02T03:04:05.678Z');
    const t = await f.things.create({ name: 'dated', owner: 'o4', size: 1, flagged: false, tags: [], seenAt: when });
    await f.things.create({ name: 'undated', owner: 'o4', size: 1, flagged: false, tags: [], seenAt: null });
    expect((await f.things.get(t.uid))!.seenAt!.toISOString()).toBe(when.toISOString());
    expect((await f.things.list({ filter: { owner: 'o4', seenAt: null } })).map((r) => r.name)).toEqual(['undated']);
    expect((await f.things.list({ filter: { owner: 'o4', seenAt: { $gte: new Date('2026-01-01') } } })).map((r) => r.name)).toEqual([
      'dated',
    ]);
  });

  it('refuses filters on unknown or JSON fields', async () => {
    await expect(f.things.list({ filter: { nope: 1 } })).rejects.toBeInstanceOf(ApiError);
    await expect(f.things.list({ filter: { tags: 'x' } })).rejects.toMatchObject({ code: 'api-106' });
  });

  it('setTexts writes several documents at once, new and replaced alike, inside a transaction too', async () => {
    const made = await Promise.all([1, 2, 3].map((at) => f.docs.create({ owner: 'o-many', at })));
    await f.docs.setText(made[0].uid, 'walrus');
    await f.docs.setTexts(
      new Map([
        [made[0].uid, 'narwhal one'],
        [made[1].uid, 'narwhal two; a@b.example'],
        [made[2].uid, 'beluga'],
      ]),
    );
    const uids = (rows: Array<{ uid: string }>) => rows.map((r) => r.uid).sort();
    expect(uids(await f.docs.search('narwhal'))).toEqual([made[0].uid, made[1].uid].sort());
    expect(await f.docs.search('walrus')).toEqual([]);
    expect(uids(await f.docs.search('b example'))).toEqual([made[1].uid]);
    await f.docs.setTexts(new Map());
    await expect(
      f.store.transaction(async (tx) => {
        await tx.repo(Doc).setTexts(new Map([[made[2].uid, 'orca']]));
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    expect(uids(await f.docs.search('beluga'))).toEqual([made[2].uid]);
    expect(await f.docs.search('orca')).toEqual([]);
    const more = await Promise.all(Array.from({ length: 1200 }, (_, at) => f.docs.create({ owner: 'o-many', at: 10 + at })));
    await f.store.transaction((tx) => tx.repo(Doc).setTexts(new Map(more.map((d, i) => [d.uid, `plankton n${i}`]))));
    expect((await f.docs.search('plankton', { limit: 1000 })).length).toBe(1000);
    expect(await f.docs.search('n1199')).toHaveLength(1);
    // The same text for several records (a message's copies), among others, in one call: each record gets it.
    const copies = await Promise.all([1, 2, 3, 4].map((at) => f.docs.create({ owner: 'o-many', at: 5000 + at })));
    await f.docs.setTexts(
      new Map([
        [copies[0].uid, 'manatee shared'],
        [copies[1].uid, 'dugong alone'],
        [copies[2].uid, 'manatee shared'],
        [copies[3].uid, 'manatee shared'],
      ]),
    );
    expect(uids(await f.docs.search('manatee shared'))).toEqual([copies[0].uid, copies[2].uid, copies[3].uid].sort());
    expect(uids(await f.docs.search('dugong'))).toEqual([copies[1].uid]);
    await f.docs.deleteMany({ owner: 'o-many' });
  });

  it('searches full-text documents: every word, prefixes, case-insensitive, with filter, order and paging', async () => {
    const a = await f.docs.create({ owner: 'o1', at: 1 });
    const b = await f.docs.create({ owner: 'o1', at: 2 });
    const c = await f.docs.create({ owner: 'o2', at: 3 });
    await f.docs.setText(a.uid, 'Quarterly REPORT about apples');
    await f.docs.setText(b.uid, 'report on pears; quarterly numbers');
    await f.docs.setText(c.uid, 'Quarterly report, other owner');
    const uids = (rows: Array<{ uid: string }>) => rows.map((r) => r.uid);
    expect(uids(await f.docs.search('report quarterly', { filter: { owner: 'o1' }, sort: [{ field: 'at', dir: 'desc' }] }))).toEqual([
      b.uid,
      a.uid,
    ]);
    expect(uids(await f.docs.search('APPL'))).toEqual([a.uid]);
    expect(uids(await f.docs.search('report', { sort: [{ field: 'at', dir: 'asc' }], limit: 1, offset: 1 }))).toEqual([b.uid]);
    expect(await f.docs.search('report bananas')).toEqual([]);
    expect(await f.docs.search('"); DROP TABLE x; --')).toEqual([]);
    expect(await f.docs.search('  ')).toEqual([]);
    // Replacing a document forgets the old words; deleting the record forgets it entirely.
    await f.docs.setText(a.uid, 'melons');
    expect(uids(await f.docs.search('apples'))).toEqual([]);
    expect(uids(await f.docs.search('melons'))).toEqual([a.uid]);
    await f.docs.delete(a.uid);
    expect(await f.docs.search('melons')).toEqual([]);
    await f.store.transaction(async (tx) => tx.repo(Doc).setText(b.uid, 'kiwis inside a transaction'));
    expect(uids(await f.docs.search('kiwi'))).toEqual([b.uid]);
    await f.docs.deleteMany({ owner: 'o1' });
    expect(await f.docs.search('kiwis')).toEqual([]);
    expect(uids(await f.docs.search('other'))).toEqual([c.uid]);
    await expect(f.things.search('x')).rejects.toThrow(/full-text/);
  });

  it('keeps full-text documents across a reopen; replaces and deletes one among many, leaving the others', async () => {
    const many = await f.store.transaction(async (tx) => {
      const out = [];
      for (let i = 0; i < 300; i++) {
        const d = await tx.repo<{ owner: string; at: number }>(Doc).create({ owner: 'o7', at: i });
        await tx.repo(Doc).setText(d.uid, `lemur w${i}q`);
        out.push(d);
      }
      return out;
    });
    const again = await openStoreOf(backend, f.db.url, [Thing, Job, Doc]);
    try {
      const docs2 = again.repo<{ owner: string; at: number }>(Doc);
      await docs2.setText(many[10].uid, 'otter');
      await docs2.delete(many[20].uid);
      expect((await docs2.search('lemur', { filter: { owner: 'o7' }, limit: 1000 })).length).toBe(298);
      expect((await docs2.search('otter')).map((r) => r.uid)).toEqual([many[10].uid]);
      expect(await docs2.search('w20q')).toEqual([]);
      expect((await docs2.search('w21q')).map((r) => r.uid)).toEqual([many[21].uid]);
    } finally {
      await again.close();
    }
    expect((await f.docs.search('otter')).map((r) => r.uid)).toEqual([many[10].uid]);
  });
});
