// The Store contract, transactions, leases and claims: run unchanged against every adapter (SQLite,
// PostgreSQL).
import { describe, expect, it } from 'vitest';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { sqlBackends } from '../../helpers/databases.js';
import { contractStore, Thing, Job, type ThingT, type JobT } from './_contract.js';
import { contractBackends } from './_contract.js';

const backends = await contractBackends();

describe.each(backends)('Store contract (transactions) on $name', (backend) => {
  const f = contractStore(backend);

  it('commits or rolls back a transaction as a whole', async () => {
    await f.store.transaction(async (tx) => {
      await tx.repo<ThingT>(Thing).create({ name: 'tx1', owner: 'o9', size: 1, flagged: false, tags: [] });
    });
    await expect(
      f.store.transaction(async (tx) => {
        await tx.repo<ThingT>(Thing).create({ name: 'tx2', owner: 'o9', size: 1, flagged: false, tags: [] });
        throw new Error('boom');
      }),
    ).rejects.toThrow('boom');
    expect((await f.things.list({ filter: { owner: 'o9' } })).map((t) => t.name)).toEqual(['tx1']);
  });

  it('keeps a transaction usable after a duplicate create it handles (api-112), and commits the rest', async () => {
    // addBlobRef's pattern: create, and on api-112 (another writer was first) go on. On PostgreSQL a
    // failed statement aborts the transaction unless the insert ran under a savepoint (bench/soak.ts).
    await f.things.create({ name: 'dup-base', owner: 'o12', size: 1, flagged: false, tags: [] });
    await f.store.transaction(async (tx) => {
      const repo = tx.repo<ThingT>(Thing);
      await repo.create({ name: 'dup-before', owner: 'o12', size: 2, flagged: false, tags: [] });
      await expect(repo.create({ name: 'dup-base', owner: 'o12', size: 3, flagged: false, tags: [] })).rejects.toMatchObject({
        code: 'api-112',
      });
      await repo.create({ name: 'dup-after', owner: 'o12', size: 4, flagged: false, tags: [] });
      const base = await repo.findOne({ name: 'dup-base' });
      expect(await repo.increment(base!.uid, { size: 10 })).toMatchObject({ size: 11 });
    });
    expect((await f.things.list({ filter: { owner: 'o12' }, sort: [{ field: 'name', dir: 'asc' }] })).map((t) => [t.name, t.size])).toEqual(
      [
        ['dup-after', 4],
        ['dup-base', 11],
        ['dup-before', 2],
      ],
    );
  });

  it('hands each leased record to exactly one of several concurrent claimers', async () => {
    for (let i = 0; i < 20; i++) await f.jobs.create({ state: 'queued' });
    const claims = await Promise.all(
      ['w1', 'w2', 'w3', 'w4'].map((owner) => f.jobs.claim({ state: 'queued' }, { owner, leaseMs: 60_000, limit: 10 })),
    );
    const uids = claims.flat().map((j) => j.uid);
    expect(uids.length).toBe(20);
    expect(new Set(uids).size).toBe(20);
    expect(await f.jobs.claim({ state: 'queued' }, { owner: 'w5', leaseMs: 60_000, limit: 10 })).toEqual([]);
    // Which claimers win is up to the database (two can take all 20 with limit 10); take any claim.
    const mine = claims.flat()[0];
    expect(await f.jobs.release(mine.uid, 'someone-else', { state: 'done' })).toBe(false);
    expect(await f.jobs.release(mine.uid, mine.claimedBy!, { state: 'done' })).toBe(true);
    expect(await f.jobs.get(mine.uid)).toMatchObject({ state: 'done', claimedBy: null, leaseUntil: null });
  });

  it('releaseMany releases several leased records with their own patches, only those the owner holds', async () => {
    for (let i = 0; i < 5; i++) await f.jobs.create({ state: 'rm-queued' });
    const mine = await f.jobs.claim({ state: 'rm-queued' }, { owner: 'rm-1', leaseMs: 60_000, limit: 4 });
    const theirs = await f.jobs.claim({ state: 'rm-queued' }, { owner: 'rm-2', leaseMs: 60_000, limit: 1 });
    expect(mine).toHaveLength(4);
    const absent = '00000000-0000-7000-8000-00000000abcd';
    const released = await f.jobs.releaseMany(
      [
        { uid: mine[0].uid, patch: { state: 'rm-done' } },
        { uid: mine[1].uid, patch: { state: 'rm-failed' } },
        { uid: mine[2].uid }, // lease dropped, nothing else changed (another set of fields: its own statement)
        { uid: theirs[0].uid, patch: { state: 'rm-stolen' } },
        { uid: absent, patch: { state: 'rm-done' } },
      ],
      'rm-1',
    );
    expect(released.sort()).toEqual([mine[0].uid, mine[1].uid, mine[2].uid].sort());
    expect(await f.jobs.get(mine[0].uid)).toMatchObject({ state: 'rm-done', claimedBy: null, leaseUntil: null, version: 3 });
    expect(await f.jobs.get(mine[1].uid)).toMatchObject({ state: 'rm-failed', claimedBy: null, leaseUntil: null });
    expect(await f.jobs.get(mine[2].uid)).toMatchObject({ state: 'rm-queued', claimedBy: null, leaseUntil: null });
    expect(await f.jobs.get(mine[3].uid)).toMatchObject({ state: 'rm-queued', claimedBy: 'rm-1' }); // not named: still held
    expect(await f.jobs.get(theirs[0].uid)).toMatchObject({ state: 'rm-queued', claimedBy: 'rm-2' });
    // In a transaction: undone with it.
    await expect(
      f.store.transaction(async (tx) => {
        expect(await tx.repo<JobT>(Job).releaseMany([{ uid: mine[3].uid, patch: { state: 'rm-done' } }], 'rm-1')).toEqual([mine[3].uid]);
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    expect(await f.jobs.get(mine[3].uid)).toMatchObject({ state: 'rm-queued', claimedBy: 'rm-1' });
    expect(await f.jobs.releaseMany([], 'rm-1')).toEqual([]);
  });

  it('gives an expired lease to the next claimer', async () => {
    const j = await f.jobs.create({ state: 'expiring' });
    const first = await f.jobs.claim({ state: 'expiring' }, { owner: 'crashed', leaseMs: 1, limit: 1 });
    expect(first.map((x) => x.uid)).toEqual([j.uid]);
    await new Promise((r) => setTimeout(r, 20));
    const second = await f.jobs.claim({ state: 'expiring' }, { owner: 'survivor', leaseMs: 60_000, limit: 1 });
    expect(second.map((x) => x.claimedBy)).toEqual(['survivor']);
  });

  it('claims the first records in the asked order, at most the limit, only where the filter holds and no live lease is', async () => {
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await f.jobs.create({ state: 'ordered' }));
    await f.jobs.create({ state: 'other' });
    const held = await f.jobs.claim({ uid: made[0].uid }, { owner: 'holder', leaseMs: 60_000, limit: 1 });
    expect(held.map((x) => x.uid)).toEqual([made[0].uid]);
    const got = await f.jobs.claim(
      { state: 'ordered' },
      { owner: 'w', leaseMs: 60_000, limit: 3, sort: [{ field: 'createdAt', dir: 'asc' }] },
    );
    expect(got.map((x) => x.uid)).toEqual([made[1].uid, made[2].uid, made[3].uid]);
    expect(got.every((x) => x.claimedBy === 'w' && x.leaseUntil instanceof Date && x.version === 2)).toBe(true);
    const newest = await f.jobs.claim(
      { state: 'ordered' },
      { owner: 'v', leaseMs: 60_000, limit: 5, sort: [{ field: 'createdAt', dir: 'desc' }] },
    );
    expect(newest.map((x) => x.uid)).toEqual([made[4].uid]);
    expect((await f.jobs.get(made[0].uid))!.claimedBy).toBe('holder');
  });
});

describe('SQLite opened by several processes at once', () => {
  it('creates the schema once and every opener succeeds', async () => {
    const handle = (await sqlBackends())[0];
    const db = await handle.open();
    const stores = await Promise.all(
      Array.from({ length: 4 }, () => openSqlStore({ url: db.url, models: [Thing, Job], synchronize: true })),
    );
    await stores[0].repo<ThingT>(Thing).create({ name: 'x', owner: 'o', size: 1, flagged: false, tags: [] });
    for (const st of stores) expect(await st.repo<ThingT>(Thing).count({})).toBe(1);
    await Promise.all(stores.map((st) => st.close()));
    await db.drop();
  });
});

describe('Store when the datastore is gone', () => {
  it('answers api-113 on ping after close', async () => {
    const db = (await sqlBackends())[0];
    const handle = await db.open();
    const store = await openSqlStore({ url: handle.url, models: [Thing], synchronize: true });
    await store.close();
    await expect(store.ping()).rejects.toMatchObject({ code: 'api-113' });
    await handle.drop();
  });
});
