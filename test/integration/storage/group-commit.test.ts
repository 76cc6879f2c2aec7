// SQLite transactions that wait beside each other commit together (lib/storage/sql/group-commit.ts),
// each atomic on its own: a failing one is undone alone, none is answered before the shared COMMIT,
// and a later one sees an earlier one's changes.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { isApiError } from '../../../lib/errors/index.js';
import { defineModel, type Store } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { groupStats } from '../../../lib/storage/sql/group-commit.js';
import { freshSqlite, type TestDatabase } from '../../helpers/databases.js';

const Item = defineModel({
  name: 'group_item',
  table: 'group_items',
  fields: { owner: z.string(), n: z.number().int() },
  indexes: [{ fields: ['owner', 'n'], unique: true }],
});
type ItemT = { owner: string; n: number };

describe('SQLite group commit', () => {
  let db: TestDatabase;
  let store: Store;
  let other: Store;
  beforeAll(async () => {
    db = freshSqlite();
    store = await openSqlStore({ url: db.url, models: [Item], synchronize: true });
    other = await openSqlStore({ url: db.url, models: [Item], synchronize: false }); // another process's connection
  });
  afterAll(async () => {
    await other?.close();
    await store?.close();
    await db?.drop();
  });

  const owned = async (s: Store, owner: string) =>
    (await s.repo<ItemT>(Item).list({ filter: { owner } })).map((r) => r.n).sort((a, b) => a - b);

  it('transactions started together commit as one SQLite transaction, and each is answered only once it is committed', async () => {
    const before = { ...groupStats };
    const seenByOther: number[][] = [];
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store
          .transaction(async (tx) => {
            await tx.repo<ItemT>(Item).create({ owner: 'g1', n: i });
            await tx.repo<ItemT>(Item).create({ owner: 'g1', n: 100 + i });
            if (i === 9) await new Promise((r) => setTimeout(r, 100)); // the group's last member takes a while: nobody may be answered meanwhile
          })
          .then(async () => seenByOther.push(await owned(other, 'g1'))),
      ),
    );
    expect(groupStats.transactions - before.transactions).toBe(1);
    expect(groupStats.members - before.members).toBe(10);
    // The first to be answered already finds all twenty rows committed, seen from another connection.
    expect(seenByOther[0]).toHaveLength(20);
    expect(await owned(store, 'g1')).toEqual([
      ...Array.from({ length: 10 }, (_, i) => i),
      ...Array.from({ length: 10 }, (_, i) => 100 + i),
    ]);
  });

  it('a transaction that fails is undone alone, with its own error; the others beside it commit', async () => {
    const before = { ...groupStats };
    const results = await Promise.allSettled([
      store.transaction(async (tx) => void (await tx.repo<ItemT>(Item).create({ owner: 'g2', n: 1 }))),
      store.transaction(async (tx) => {
        await tx.repo<ItemT>(Item).create({ owner: 'g2', n: 2 });
        throw new Error('second fails after writing');
      }),
      store.transaction(async (tx) => {
        await tx.repo<ItemT>(Item).create({ owner: 'g2', n: 3 });
        await tx.repo<ItemT>(Item).create({ owner: 'g2', n: 1 }); // the unique (owner, n): taken by the first
      }),
      store.transaction(async (tx) => void (await tx.repo<ItemT>(Item).create({ owner: 'g2', n: 4 }))),
    ]);
    expect(groupStats.transactions - before.transactions).toBe(1);
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'rejected', 'fulfilled']);
    expect(((results[1] as PromiseRejectedResult).reason as Error).message).toBe('second fails after writing');
    const dup = (results[2] as PromiseRejectedResult).reason;
    expect(isApiError(dup) && dup.code).toBe('api-112');
    expect(await owned(other, 'g2')).toEqual([1, 4]); // 2 and 3 were undone with their transactions
  });

  it('a transaction sees what the ones before it in the same group wrote', async () => {
    const seen = await Promise.all([
      store.transaction(async (tx) => void (await tx.repo<ItemT>(Item).create({ owner: 'g3', n: 1 }))),
      store.transaction(async (tx) => owned(tx, 'g3')),
    ]);
    expect(seen[1]).toEqual([1]);
  });

  it('transactions arriving while a group runs join it or the next one; every one is committed exactly once', async () => {
    const started: Array<Promise<unknown>> = [];
    for (let i = 0; i < 50; i++) {
      started.push(
        store.transaction(async (tx) => {
          await tx.repo<ItemT>(Item).create({ owner: 'g4', n: i });
          if (i % 7 === 0)
            started.push(store.transaction(async (tx2) => void (await tx2.repo<ItemT>(Item).create({ owner: 'g4', n: 1000 + i }))));
        }),
      );
      if (i % 10 === 0) await new Promise((r) => setImmediate(r));
    }
    for (let k = 0; k < started.length; k++) await started[k];
    const expected = [
      ...Array.from({ length: 50 }, (_, i) => i),
      ...Array.from({ length: 50 }, (_, i) => i)
        .filter((i) => i % 7 === 0)
        .map((i) => 1000 + i),
    ];
    expect(await owned(other, 'g4')).toEqual(expected.sort((a, b) => a - b));
  });
});
