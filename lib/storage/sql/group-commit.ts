import type { DataSource, EntityManager } from 'typeorm';
import { beginImmediate, type Mutex, type SqliteHandle } from './sqlite-lock.js';

// Group commit for SQLite transactions (store.transaction). A process has one connection, so its
// transactions run one after another anyway; each on its own would pay BEGIN IMMEDIATE, the
// busy-timeout switch and a COMMIT that writes every page it touched to the WAL, on the daemon's one
// thread, per filed copy (bench/README.md, ingest). Transactions that are waiting when one starts, or
// that arrive while it runs, run in the same SQLite transaction, each in a savepoint of its own:
// - a member's changes are atomic: one that fails is rolled back to its savepoint and rejects at
//   once, without touching the others;
// - every member resolves only after the shared COMMIT (and the caller then waits for the WAL
//   fsync, as after any commit), so nothing is answered before it is durable, and a crash before
//   the COMMIT loses only work nobody was told was done;
// - a failure that ends the whole SQLite transaction (the COMMIT, or an error after which SQLite
//   has rolled back by itself) rejects every member that had not been answered;
// - members see the earlier members' changes (one connection, in order), as they would have after
//   those committed one by one.
// A group takes at most MAX_MEMBERS, so the first member is never held back long.

const MAX_MEMBERS = 32;

type Handle = SqliteHandle & { inTransaction: boolean };
interface Member {
  fn: (m: EntityManager) => Promise<unknown>;
  resolve(v: unknown): void;
  reject(e: unknown): void;
}
interface Group {
  queue: Member[];
  running: boolean;
}
const groups = new WeakMap<DataSource, Group>();
const savepoints = new WeakMap<Handle, { save: { run(): unknown }; release: { run(): unknown }; undo: { run(): unknown } }>();

/** fn in a transaction on SQLite's one connection, committed together with the transactions beside it. */
export function groupTransaction<R>(ds: DataSource, lock: Mutex, fn: (m: EntityManager) => Promise<R>): Promise<R> {
  let g = groups.get(ds);
  if (!g) groups.set(ds, (g = { queue: [], running: false }));
  const group = g;
  return new Promise<R>((resolve, reject) => {
    group.queue.push({ fn, resolve: resolve as (v: unknown) => void, reject });
    if (!group.running) void drain(ds, lock, group);
  });
}

/** Statistics for tests: SQLite transactions begun by groups and members they held. */
export const groupStats = { transactions: 0, members: 0 };

async function drain(ds: DataSource, lock: Mutex, g: Group): Promise<void> {
  g.running = true;
  try {
    while (g.queue.length) await lock.run(() => runGroup(ds, g));
  } finally {
    g.running = false;
  }
}

async function runGroup(ds: DataSource, g: Group): Promise<void> {
  const driver = ds.driver as unknown as { databaseConnection: Handle };
  const db = driver.databaseConnection;
  let sp = savepoints.get(db);
  if (!sp)
    savepoints.set(
      db,
      (sp = {
        save: db.prepare('SAVEPOINT svcmail_member'),
        release: db.prepare('RELEASE svcmail_member'),
        undo: db.prepare('ROLLBACK TO svcmail_member'),
      }),
    );
  const qr = ds.createQueryRunner();
  const done: Array<{ m: Member; r: unknown }> = [];
  let current: Member | null = null;
  try {
    try {
      await qr.connect();
      await beginImmediate(driver);
    } catch (e) {
      // The write lock could not be had (another process held it past busy_timeout): the members waiting now fail as each would have.
      for (const m of g.queue.splice(0, MAX_MEMBERS)) m.reject(e);
      return;
    }
    Object.assign(qr, { isTransactionActive: true, transactionDepth: 1 });
    groupStats.transactions++;
    for (let taken = 0; g.queue.length && taken < MAX_MEMBERS; taken++) {
      current = g.queue.shift()!;
      groupStats.members++;
      sp.save.run();
      let result: unknown;
      try {
        result = await current.fn(qr.manager);
      } catch (e) {
        if (!db.inTransaction) throw e; // SQLite ended the whole transaction: every member fails (below)
        sp.undo.run();
        sp.release.run();
        current.reject(e);
        current = null;
        continue;
      }
      sp.release.run();
      done.push({ m: current, r: result });
      current = null;
    }
    await qr.commitTransaction();
    for (const { m, r } of done) m.resolve(r);
  } catch (e) {
    if (db.inTransaction) await qr.rollbackTransaction().catch(() => undefined);
    current?.reject(e);
    for (const { m } of done) m.reject(e);
  } finally {
    await qr.release();
  }
}
