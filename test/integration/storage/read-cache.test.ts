// The SQLite read path keeps results while the database is unchanged (lib/storage/sql/select.ts).
// PostgreSQL keeps results with the snapshot they were read at. A kept result must never outlive a
// change: not one made through this store, not one committed by another connection (another
// process: the worker, the CLI), not one that was still uncommitted when the result was read, not one
// made and rolled back inside a transaction. And callers never share objects. PostgreSQL reads format timestamps in the database;
// the dates read back must be the instants written.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineModel, type Store } from '../../../lib/storage/index.js';
import type { SqlStore } from '../../../lib/storage/sql/adapter.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { sqlBackends, type TestDatabase } from '../../helpers/databases.js';

const Flat = defineModel({
  name: 'cache_flat',
  table: 'cache_flats',
  fields: { owner: z.string(), n: z.number().int(), at: z.date().nullable().optional() },
  indexes: [{ fields: ['owner'] }],
});
const Nested = defineModel({
  name: 'cache_nested',
  table: 'cache_nesteds',
  fields: { owner: z.string(), tags: z.array(z.string()).default([]) },
});
const Busy = defineModel({ name: 'cache_busy', table: 'cache_busies', fields: { owner: z.string(), n: z.number().int() } });
type FlatT = { owner: string; n: number; at?: Date | null };
type NestedT = { owner: string; tags: string[] };

const backends = await sqlBackends();

describe.each(backends)('read path ($name)', (backend) => {
  let db: TestDatabase;
  let store: Store;
  let other: Store;

  beforeAll(async () => {
    db = await backend.open();
    store = await openSqlStore({ url: db.url, models: [Flat, Nested, Busy], synchronize: true });
    // a second store on the same database: another connection, as another process would have
    other = await openSqlStore({ url: db.url, models: [Flat, Nested, Busy], synchronize: false });
  });
  afterAll(async () => {
    await other?.close();
    await store?.close();
    await db?.drop();
  });

  const ns = (rows: Array<{ n: number }>) => rows.map((r) => r.n).sort((a, b) => a - b);

  it('sees a write through the same store and one committed by another connection', async () => {
    const flats = store.repo<FlatT>(Flat);
    const a = await flats.create({ owner: 'o1', n: 1 });
    expect(ns(await flats.list({ filter: { owner: 'o1' } }))).toEqual([1]);
    expect(ns(await flats.list({ filter: { owner: 'o1' } }))).toEqual([1]); // a repeat (kept on SQLite)
    await flats.update(a.uid, { n: 2 });
    expect(ns(await flats.list({ filter: { owner: 'o1' } }))).toEqual([2]);
    expect((await flats.get(a.uid))!.n).toBe(2);
    await other.repo<FlatT>(Flat).create({ owner: 'o1', n: 3 });
    expect(ns(await flats.list({ filter: { owner: 'o1' } }))).toEqual([2, 3]);
    await other.repo<FlatT>(Flat).update(a.uid, { n: 4 });
    expect((await flats.get(a.uid))!.n).toBe(4);
    await other.repo<FlatT>(Flat).delete(a.uid);
    expect(await flats.get(a.uid)).toBeNull();
    expect(ns(await flats.list({ filter: { owner: 'o1' } }))).toEqual([3]);
  });

  it('a change made and rolled back inside a transaction is never served afterwards', async () => {
    const flats = store.repo<FlatT>(Flat);
    await flats.create({ owner: 'o2', n: 1 });
    expect(ns(await flats.list({ filter: { owner: 'o2' } }))).toEqual([1]);
    await expect(
      store.transaction(async (tx) => {
        await tx.repo<FlatT>(Flat).create({ owner: 'o2', n: 2 });
        expect(ns(await tx.repo<FlatT>(Flat).list({ filter: { owner: 'o2' } }))).toEqual([1, 2]);
        throw new Error('roll back');
      }),
    ).rejects.toThrow('roll back');
    expect(ns(await flats.list({ filter: { owner: 'o2' } }))).toEqual([1]);
    expect(ns(await flats.list({ filter: { owner: 'o2' } }))).toEqual([1]);
  });

  it('a repeated read is answered from the kept result while nothing has changed, never after a commit', async () => {
    const flats = store.repo<FlatT>(Flat);
    await flats.create({ owner: 'o5', n: 1 });
    const served = () => (store as SqlStore).readsServedKept;
    // Through a session the repeats are served at the stamp its first read took, whatever commits
    // elsewhere meanwhile; outside one, only while the stamp has not moved. On PostgreSQL the
    // snapshot is the whole cluster's, which other test files move at any moment, so there the
    // repeats outside a session are asserted only never to be stale (below).
    const mine = (store as SqlStore).session().repo<FlatT>(Flat);
    expect(ns(await mine.list({ filter: { owner: 'o5' } }))).toEqual([1]);
    let before = served();
    for (let i = 0; i < 3; i++) expect(ns(await mine.list({ filter: { owner: 'o5' } }))).toEqual([1]);
    expect(served() - before).toBe(3);
    if (backend.name === 'sqlite') {
      await flats.list({ filter: { owner: 'o5' } });
      before = served();
      for (let i = 0; i < 3; i++) expect(ns(await flats.list({ filter: { owner: 'o5' } }))).toEqual([1]);
      expect(served() - before).toBe(3);
    }
    await other.repo<FlatT>(Flat).create({ owner: 'o5', n: 2 }); // a commit: the kept result is not served again outside a session
    before = served();
    expect(ns(await flats.list({ filter: { owner: 'o5' } }))).toEqual([1, 2]);
    expect(served() - before).toBe(0);
    expect(
      ns(
        await (store as SqlStore)
          .session()
          .repo<FlatT>(Flat)
          .list({ filter: { owner: 'o5' } }),
      ),
    ).toEqual([1, 2]); // nor to a new request
  });

  it('a change that was still uncommitted when the result was read is seen once it commits', async () => {
    const flats = store.repo<FlatT>(Flat);
    await flats.create({ owner: 'o6', n: 1 });
    await other.transaction(async (tx) => {
      await tx.repo<FlatT>(Flat).create({ owner: 'o6', n: 2 });
      // read (and kept) while the other connection's transaction is open: its row is not visible yet
      expect(ns(await flats.list({ filter: { owner: 'o6' } }))).toEqual([1]);
      expect(ns(await flats.list({ filter: { owner: 'o6' } }))).toEqual([1]);
    });
    expect(ns(await flats.list({ filter: { owner: 'o6' } }))).toEqual([1, 2]);
    const one = (await flats.list({ filter: { owner: 'o6', n: 1 } }))[0]!;
    await other.transaction(async (tx) => {
      await tx.repo<FlatT>(Flat).update(one.uid, { n: 3 });
      expect((await flats.get(one.uid))!.n).toBe(1);
    });
    expect((await flats.get(one.uid))!.n).toBe(3);
  });

  it('kept results together hold a bounded number of rows: the least recently used go first', async () => {
    await store.transaction(async (tx) => {
      for (let i = 0; i < 1000; i++) await tx.repo<FlatT>(Flat).create({ owner: 'bulk', n: i });
    });
    // Through one session: its latest read's stamp is the one the last page was kept with, so a
    // repeat of that page is served whatever commits elsewhere (see above).
    const flats = (store as SqlStore).session().repo<FlatT>(Flat);
    const page = (k: number) => flats.list({ filter: { owner: 'bulk', n: { $gte: 0, $lt: 1000 + k } }, limit: 1000 });
    const served = () => (store as SqlStore).readsServedKept;
    for (let k = 0; k < 25; k++) expect(await page(k)).toHaveLength(1000); // 25 000 rows kept at most 20 000
    let before = served();
    await page(24);
    expect(served() - before).toBe(1); // the most recent is kept
    before = served();
    await page(0);
    expect(served() - before).toBe(0); // the oldest was dropped for the row budget
  });

  it('a session (one API request) reads at one point until it writes, and always reads its own writes', async () => {
    const flats = store.repo<FlatT>(Flat);
    await flats.create({ owner: 'o7', n: 1 });
    const session = (store as SqlStore).session();
    const mine = session.repo<FlatT>(Flat);
    const served = () => (store as SqlStore).readsServedKept;
    expect(ns(await mine.list({ filter: { owner: 'o7' } }))).toEqual([1]);
    await other.repo<FlatT>(Flat).create({ owner: 'o7', n: 2 }); // committed after the session's first read
    let before = served();
    expect(ns(await mine.list({ filter: { owner: 'o7' } }))).toEqual([1]); // the session's point: no stamp read, no round trip
    expect(served() - before).toBe(1);
    expect(
      ns(
        await (store as SqlStore)
          .session()
          .repo<FlatT>(Flat)
          .list({ filter: { owner: 'o7' } }),
      ),
    ).toEqual([1, 2]); // a new request sees it
    const three = await mine.create({ owner: 'o7', n: 3 }); // the session writes: its next read takes a new point
    expect(ns(await mine.list({ filter: { owner: 'o7' } }))).toEqual([1, 2, 3]);
    await mine.update(three.uid, { n: 4 });
    expect((await mine.get(three.uid))!.n).toBe(4);
    await session.transaction(async (tx) => {
      await tx.repo<FlatT>(Flat).update(three.uid, { n: 5 });
    });
    before = served();
    expect((await mine.get(three.uid))!.n).toBe(5);
    expect(ns(await mine.list({ filter: { owner: 'o7' } }))).toEqual([1, 2, 5]);
    expect(served() - before).toBe(0);
  });

  if (backend.name === 'postgres') {
    it('requests reaching a read in the same turn share one snapshot check; one arriving after it was sent gets a check of its own and sees what committed meanwhile', async () => {
      const pg = store as SqlStore;
      const flats = store.repo<FlatT>(Flat);
      await flats.create({ owner: 'o8', n: 1 });
      const read = () =>
        pg
          .session()
          .repo<FlatT>(Flat)
          .list({ filter: { owner: 'o8' } });
      expect(ns(await read())).toEqual([1]); // kept with its snapshot
      // Three requests in one turn: one check between them (or a fresh read when a commit elsewhere moved the snapshot).
      let checks = pg.snapshotChecks;
      const same = await Promise.all([read(), read(), read()]);
      for (const rows of same) expect(ns(rows)).toEqual([1]);
      expect(pg.snapshotChecks - checks).toBe(1);
      // A request whose check was already sent: a commit that completes before the next request
      // arrives must be seen by that request, so it cannot share the earlier check.
      checks = pg.snapshotChecks;
      const early = read();
      await new Promise((r) => setImmediate(r)); // the early request's check is sent now
      expect(pg.snapshotChecks - checks).toBe(1);
      await other.repo<FlatT>(Flat).create({ owner: 'o8', n: 2 });
      const late = await read();
      expect(ns(late)).toEqual([1, 2]);
      expect(pg.snapshotChecks - checks).toBeGreaterThanOrEqual(2);
      expect([[1], [1, 2]]).toContainEqual(ns(await early)); // either point is after the early request arrived
    });
  }

  it('while commits keep outdating the kept results, reads outside a request become plain reads (nothing read to check, nothing kept), never stale; kept again once the commits stop', async () => {
    const sql = store as SqlStore;
    const busy = store.repo<FlatT>(Busy);
    await busy.create({ owner: 'b', n: 0 });
    const plain = sql.plainReads;
    for (let i = 1; i <= 40; i++) {
      expect(await busy.list({ filter: { owner: 'b' } })).toHaveLength(i);
      await other.repo<FlatT>(Busy).create({ owner: 'b', n: i });
    }
    expect(sql.plainReads - plain).toBeGreaterThanOrEqual(20);
    // A request's reads still go through the kept results.
    const mine = sql.session().repo<FlatT>(Busy);
    expect(await mine.list({ filter: { owner: 'b' } })).toHaveLength(41);
    const served = sql.readsServedKept;
    expect(await mine.list({ filter: { owner: 'b' } })).toHaveLength(41);
    expect(sql.readsServedKept - served).toBe(1);
    if (backend.name === 'sqlite') {
      // The commits stopped: the probes (one read in 16) find their result current, and keeping comes back.
      for (let i = 0; i < 100; i++) expect(await busy.list({ filter: { owner: 'b' } })).toHaveLength(41);
      const before = sql.readsServedKept;
      const plainBefore = sql.plainReads;
      for (let i = 0; i < 3; i++) expect(await busy.list({ filter: { owner: 'b' } })).toHaveLength(41);
      expect(sql.readsServedKept - before).toBe(3);
      expect(sql.plainReads - plainBefore).toBe(0);
    }
  });

  it('callers never share objects: changing a returned record changes no later read', async () => {
    const flats = store.repo<FlatT>(Flat);
    const nested = store.repo<NestedT>(Nested);
    await flats.create({ owner: 'o3', n: 7 });
    await nested.create({ owner: 'o3', tags: ['a'] });
    const first = await flats.list({ filter: { owner: 'o3' } });
    first[0]!.n = 99;
    expect((await flats.list({ filter: { owner: 'o3' } }))[0]!.n).toBe(7);
    const tagged = await nested.list({ filter: { owner: 'o3' } });
    tagged[0]!.tags.push('b');
    expect((await nested.list({ filter: { owner: 'o3' } }))[0]!.tags).toEqual(['a']);
  });

  it('dates read back are the instants written, as Dates that serialise to ISO text', async () => {
    const flats = store.repo<FlatT>(Flat);
    const at = new Date('2031-02-03T04:05:06.789Z');
    const created = await flats.create({ owner: 'o4', n: 1, at });
    const got = (await flats.get(created.uid))!;
    expect(got.at).toBeInstanceOf(Date);
    expect(got.at!.getTime()).toBe(at.getTime());
    expect(JSON.parse(JSON.stringify(got)).at).toBe('2031-02-03T04:05:06.789Z');
    expect((await flats.list({ filter: { owner: 'o4', at: { $gte: at } } })).map((r) => r.uid)).toEqual([created.uid]);
    expect(Math.abs(got.createdAt.getTime() - created.createdAt.getTime())).toBeLessThan(1);
  });
});
