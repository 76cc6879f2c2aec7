// Store.transaction(fn, { syncCommit: false }): visible at once, atomic like any transaction, not
// waited for on its way to disk (PostgreSQL: synchronous_commit off for that transaction only).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DataSource } from 'typeorm';
import { z } from 'zod';
import { defineModel, type Store } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { asyncCommitTransaction } from '../../../lib/storage/sql/transaction.js';
import { freshPostgres, sqlBackends, type TestDatabase } from '../../helpers/databases.js';

const Tally = defineModel({ name: 'async_tally', table: 'async_tallies', fields: { name: z.string(), n: z.number().int() } });
type TallyT = { name: string; n: number };
const backends = await sqlBackends();

describe.each(backends)('transactions with an asynchronous commit ($name)', (backend) => {
  let db: TestDatabase;
  let store: Store;
  beforeAll(async () => {
    db = await backend.open();
    store = await openSqlStore({ url: db.url, models: [Tally], synchronize: true });
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('commit as a whole and are seen at once; a throw undoes them; later transactions are unaffected', async () => {
    const tallies = store.repo<TallyT>(Tally);
    const made = await store.transaction(
      async (tx) => {
        const t = await tx.repo<TallyT>(Tally).create({ name: 'async-a', n: 1 });
        await tx.repo<TallyT>(Tally).increment(t.uid, { n: 2 });
        return t;
      },
      { syncCommit: false },
    );
    expect(await tallies.get(made.uid)).toMatchObject({ n: 3, version: 2 });
    await expect(
      store.transaction(
        async (tx) => {
          await tx.repo<TallyT>(Tally).increment(made.uid, { n: 100 });
          await tx.repo<TallyT>(Tally).create({ name: 'async-b', n: 1 });
          throw new Error('undo');
        },
        { syncCommit: false },
      ),
    ).rejects.toThrow('undo');
    expect(await tallies.get(made.uid)).toMatchObject({ n: 3 });
    expect(await tallies.findOne({ name: 'async-b' })).toBeNull();
    // side by side with ordinary transactions (SQLite: in one group commit)
    await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        store.transaction((tx) => tx.repo<TallyT>(Tally).increment(made.uid, { n: 1 }), { syncCommit: i % 2 === 0 }),
      ),
    );
    expect(await tallies.get(made.uid)).toMatchObject({ n: 13 });
  });
});

describe.runIf(backends.some((b) => b.name === 'postgres'))('PostgreSQL: synchronous_commit off for that transaction only', () => {
  let db: TestDatabase;
  let ds: DataSource;
  beforeAll(async () => {
    db = await freshPostgres();
    ds = new DataSource({ type: 'postgres', url: db.url, poolSize: 1 });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
    await db?.drop();
  });

  it('inside: off; after it commits or rolls back, the same connection is back to on', async () => {
    const setting = async (q: { query(s: string): Promise<Array<{ s: string }>> }) =>
      (await q.query("SELECT current_setting('synchronous_commit') AS s"))[0].s;
    expect(await setting(ds)).toBe('on');
    expect(await asyncCommitTransaction(ds, (m) => setting(m))).toBe('off');
    expect(await setting(ds)).toBe('on'); // pool of one: the same connection
    await expect(
      asyncCommitTransaction(ds, async (m) => {
        expect(await setting(m)).toBe('off');
        throw new Error('undo');
      }),
    ).rejects.toThrow('undo');
    expect(await setting(ds)).toBe('on');
  });
});
