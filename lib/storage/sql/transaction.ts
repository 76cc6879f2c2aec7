import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

/**
 * A transaction TypeORM cannot begin itself (SQLite's BEGIN IMMEDIATE; PostgreSQL's START
 * TRANSACTION with SET LOCAL in the same round trip): `begin` starts it on the runner's
 * connection and the runner's bookkeeping is set as startTransaction would set it; COMMIT,
 * ROLLBACK and savepoints stay TypeORM's.
 */
export async function beganTransaction<R>(ds: DataSource, begin: (qr: QueryRunner) => Promise<unknown>, fn: (m: EntityManager) => Promise<R>): Promise<R> {
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
