import type { DataSource, EntityManager, QueryRunner } from 'typeorm';
import type { SqlDialect } from './entities.js';
import { beginImmediate, type SqliteHandle } from './sqlite-lock.js';

/**
 * A transaction TypeORM cannot begin itself (SQLite's BEGIN IMMEDIATE; PostgreSQL's START
 * TRANSACTION with SET LOCAL in the same round trip): `begin` starts it on the runner's
 * connection and the runner's bookkeeping is set as startTransaction would set it; COMMIT,
 * ROLLBACK and savepoints stay TypeORM's.
 */
export async function beganTransaction<R>(
  ds: DataSource,
  begin: (qr: QueryRunner) => Promise<unknown>,
  fn: (m: EntityManager) => Promise<R>,
): Promise<R> {
  const qr = ds.createQueryRunner();
  await qr.connect();
  try {
    await begin(qr);
    Object.assign(qr, { isTransactionActive: true, transactionDepth: 1 });
    let result: R;
    try {
      result = await fn(qr.manager);
    } catch (e) {
      await qr.rollbackTransaction().catch(() => undefined);
      throw e;
    }
    await qr.commitTransaction();
    return result;
  } finally {
    await qr.release();
  }
}

/**
 * A transaction on SQLite's connection, begun IMMEDIATE: a deferred transaction
 * that reads and then writes cannot wait for another process's writer (SQLite answers SQLITE_BUSY
 * at once rather than let it write over a stale snapshot), so a worker filing while the api daemon
 * queues mail failed with "database is locked". IMMEDIATE takes the write lock first, where
 * busy_timeout applies. TypeORM can only issue a deferred BEGIN (transaction.ts).
 */
function sqliteTransaction<R>(ds: DataSource, fn: (m: EntityManager) => Promise<R>): Promise<R> {
  return beganTransaction(ds, () => beginImmediate(ds.driver as unknown as { databaseConnection: SqliteHandle }), fn);
}

/**
 * PostgreSQL: a transaction whose COMMIT does not wait for the WAL flush (SET LOCAL
 * synchronous_commit = off, sent with its START TRANSACTION in one round trip). Store.transaction
 * with syncCommit false.
 */
export function asyncCommitTransaction<R>(ds: DataSource, fn: (m: EntityManager) => Promise<R>): Promise<R> {
  return beganTransaction(ds, (qr) => qr.query('START TRANSACTION; SET LOCAL synchronous_commit = off'), fn);
}

/** A transaction on the store's connection: TypeORM's on PostgreSQL, BEGIN IMMEDIATE on SQLite. */
export function inTransaction<R>(ds: DataSource, dialect: SqlDialect, fn: (m: EntityManager) => Promise<R>): Promise<R> {
  return dialect === 'sqlite' ? sqliteTransaction(ds, fn) : ds.transaction(fn);
}
