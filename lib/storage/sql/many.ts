import type { DataSource, EntityManager, ObjectLiteral } from 'typeorm';
import { ApiError } from '../../errors/index.js';
import { touchesValues, type ModelDef } from '../model.js';
import type { SqlDialect } from './entities.js';
import { inserterOf, rowsInserterOf } from './insert.js';
import type { SelectRunner } from './select.js';
import type { Writer } from './update.js';
import { termsOf, termsTable, writeValues } from './value-index.js';

/**
 * Writes of several records at once (Repo createMany, createOrAddMany, incrementMany, releaseMany).
 * On PostgreSQL each is one statement per set of fields given and per MANY_ROWS records, whose text
 * does not depend on how many there are (insert.ts RowsInserter, update.ts incrementMany); on
 * SQLite, where a statement costs no round trip, a loop of the one-record statements in one
 * transaction.
 */

/** What these writes need of a repo (SqlRepo hands over its own). */
export interface RepoParts {
  ds: DataSource;
  dialect: SqlDialect;
  model: ModelDef;
  sel: SelectRunner;
  /** The model has value indexes. */
  values: boolean;
  /** The repo's manager: a transaction's inside one. */
  manager: EntityManager;
  /** A write outside a transaction: under the SQLite lock, then durable. */
  write<R>(fn: () => Promise<R>): Promise<R>;
  /** fn in the caller's transaction, else in a new one. */
  atomic<R>(fn: (m: EntityManager) => Promise<R>): Promise<R>;
  /** Inside a PostgreSQL transaction a conflicting row is skipped (the transaction stays usable). */
  skipConflict(m: EntityManager): boolean;
  writer(): Writer;
}

/** Records per statement. */
const MANY_ROWS = 500;

function groupBy<V>(items: V[], key: (v: V) => string): Map<string, V[]> {
  const out = new Map<string, V[]>();
  for (const v of items) {
    const k = key(v);
    const list = out.get(k);
    if (list) list.push(v);
    else out.set(k, [v]);
  }
  return out;
}

/** The records in statements: grouped by the columns they give, at most MANY_ROWS each. */
function statementsOf(p: RepoParts, recs: ObjectLiteral[]): ObjectLiteral[][] {
  const rows = rowsInserterOf(p.ds, p.model, p.sel);
  return [...groupBy(recs, (r) => rows.columnsKey(r)).values()].flatMap((g) =>
    Array.from({ length: Math.ceil(g.length / MANY_ROWS) }, (_, i) => g.slice(i * MANY_ROWS, (i + 1) * MANY_ROWS)),
  );
}

const RACE_ATTEMPTS = 5;

/**
 * createOrAdd on PostgreSQL outside a transaction: the statement lost a race it would win if run
 * again (it was undone whole, so running it again adds once). Concurrent first inserts of one uid on
 * a table with another unique index can wait for each other (deadlock, 40P01) or meet in that other
 * index before the uid conflict is seen (23505, api-112); run again, the uid conflict is found first
 * and the record is added to. A real clash in the other index fails every time and is answered.
 */
export async function retryRaces<R>(fn: () => Promise<R>): Promise<R> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await fn();
    } catch (e) {
      const driver = (e as { driverError?: { code?: string } }).driverError;
      const code = driver?.code ?? (e as { code?: string }).code;
      const lostRace = code === '40P01' || (e instanceof ApiError && e.code === 'api-112');
      if (!lostRace || attempt >= RACE_ATTEMPTS) throw e;
    }
  }
}

/** Creates the records (all or none, or leaving out the ones a unique key refuses); answers the ones written. */
export function createMany(p: RepoParts, recs: ObjectLiteral[], skipExisting: boolean): Promise<ObjectLiteral[]> {
  const kept = (written: Set<string>) => (written.size === recs.length ? recs : recs.filter((r) => written.has(String(r.uid))));
  if (p.dialect === 'sqlite') {
    const one = inserterOf(p.ds, p.dialect, p.model, p.sel);
    return p.write(() =>
      p.atomic(async (m) => {
        const written = new Set<string>();
        for (const rec of recs) {
          if (await one.insert(m, rec, skipExisting)) written.add(String(rec.uid));
          else if (!skipExisting) throw new ApiError('api-112');
        }
        if (p.values) await writeValues(m, p.dialect, p.model, kept(written), true);
        return kept(written);
      }),
    );
  }
  const rows = rowsInserterOf(p.ds, p.model, p.sel);
  const statements = statementsOf(p, recs);
  const insert = async (m: EntityManager, chunk: ObjectLiteral[], skipConflict: boolean, written: Set<string>) => {
    const values = p.values ? { table: termsTable(p.model), terms: chunk.flatMap((r) => termsOf(p.model, r)) } : undefined;
    const uids = await rows.insert(m, chunk, skipConflict, values);
    if (!skipExisting && uids.length !== chunk.length) throw new ApiError('api-112');
    for (const uid of uids) written.add(uid);
  };
  // One statement outside a transaction is all or nothing by itself (a clash: 23505, api-112).
  if (statements.length === 1 && !p.manager.queryRunner) {
    return p.write(async () => {
      const written = new Set<string>();
      await insert(p.manager, statements[0], skipExisting, written);
      return kept(written);
    });
  }
  return p.write(() =>
    p.atomic(async (m) => {
      const written = new Set<string>();
      for (const chunk of statements) await insert(m, chunk, skipExisting || p.skipConflict(m), written);
      return kept(written);
    }),
  );
}

/** createOrAdd of records with distinct uids, in uid order. */
export function createOrAddMany(p: RepoParts, recs: ObjectLiteral[], adding: string[]): Promise<void> {
  if (p.dialect === 'sqlite') {
    const one = inserterOf(p.ds, p.dialect, p.model, p.sel);
    return p.write(() =>
      p.atomic(async (m) => {
        for (const rec of recs) await one.createOrAdd(m, rec, adding);
      }),
    );
  }
  const rows = rowsInserterOf(p.ds, p.model, p.sel);
  const statements = statementsOf(p, recs);
  if (statements.length === 1 && !p.manager.queryRunner)
    return retryRaces(() => p.write(async () => void (await rows.createOrAdd(p.manager, statements[0], adding))));
  return p.write(() =>
    p.atomic(async (m) => {
      for (const chunk of statements) await rows.createOrAdd(m, chunk, adding);
    }),
  );
}

/** Raises records with distinct uids, given in uid order, by their own amounts; answers the rows written in uid order. */
export function incrementMany(
  p: RepoParts,
  changes: Array<{ uid: string; deltas: Record<string, number> }>,
): Promise<Record<string, unknown>[]> {
  if (p.dialect === 'sqlite') {
    return p.write(() =>
      p.atomic(async (m) => {
        const out: Record<string, unknown>[] = [];
        for (const c of changes)
          out.push(...(await p.writer().updateReturning(m, { set: {}, increments: c.deltas, where: [{ uid: c.uid }] })));
        return out;
      }),
    );
  }
  const fields = [...new Set(changes.flatMap((c) => Object.keys(c.deltas)))].sort();
  return p.write(async () =>
    (await p.writer().incrementMany(p.manager, changes, fields)).sort((a, b) => (String(a.uid) < String(b.uid) ? -1 : 1)),
  );
}

/** Releases the leases `owner` holds on these records, each with its patch; answers the uids released. */
export function releaseMany(p: RepoParts, items: Array<{ uid: string; patch: ObjectLiteral }>, owner: string): Promise<string[]> {
  const freed = { claimedBy: null, leaseUntil: null };
  const recs = items.map((i) => ({ ...i.patch, ...freed, uid: i.uid }) as ObjectLiteral);
  if (p.dialect === 'sqlite' || (p.values && recs.some((r) => touchesValues(p.model, r)))) {
    return p.write(() =>
      p.atomic(async (m) => {
        const released: string[] = [];
        for (const i of items)
          if ((await p.writer().update(m, { set: { ...i.patch, ...freed }, where: [{ uid: i.uid, claimedBy: owner }] })) > 0)
            released.push(i.uid);
        return released;
      }),
    );
  }
  // PostgreSQL: one statement per set of fields patched (a round's entries mostly share one).
  const rows = rowsInserterOf(p.ds, p.model, p.sel);
  const statements = statementsOf(p, recs);
  const run = async (m: EntityManager) =>
    (await Promise.all(statements.map((chunk) => rows.update(m, chunk, { claimedBy: owner })))).flat();
  if (statements.length === 1 || p.manager.queryRunner) return p.write(() => run(p.manager));
  return p.write(() => p.atomic(run));
}
