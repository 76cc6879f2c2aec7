import type { DataSource, EntityManager } from 'typeorm';
import { invalid } from '../../errors/index.js';
import type { ModelDef, ValueIndexDecl } from '../model.js';
import type { Condition, Filter } from '../port.js';
import type { SqlDialect } from './entities.js';
import { above, cleanValue as clean } from '../terms.js';

// Value indexes (ModelDef.valueIndexes) live in one side table per model, "<table>_terms", with
// rows (name, value, scope, uid). The primary key (name, value, scope, uid) answers "which records
// have this value" (and "…a value starting with this", byte order: SQLite's BINARY collation,
// COLLATE "C" on PostgreSQL) with one index range; a second index on uid serves rewrites and
// deletes. Filters become `uid IN (SELECT uid FROM <table>_terms WHERE …)`: exact at any size.

export const termsTable = (model: ModelDef): string => `"${model.table}_terms"`;

export const hasValueIndexes = (model: ModelDef): boolean => Boolean(model.valueIndexes?.length);

export function valueIndexOf(model: ModelDef, name: string): ValueIndexDecl | undefined {
  return model.valueIndexes?.find((v) => v.name === name);
}

/** The conditions on the side table's rows for one filter condition on a value index. */
export function valueWhere(vi: ValueIndexDecl, cond: Condition, filter: Filter | undefined, ph: (v: unknown) => string): string {
  if (cond === null || typeof cond !== 'object' || cond instanceof Date || !('$has' in cond || '$prefix' in cond)) {
    throw invalid(`${vi.name} is a value index: filter it with $has or $prefix`);
  }
  const parts = [`name = ${ph(vi.name)}`];
  if ('$has' in cond) {
    parts.push(`value = ${ph(clean(String(cond.$has)))}`);
  } else {
    const p = clean(String(cond.$prefix));
    if (p) {
      parts.push(`value >= ${ph(p)}`);
      const hi = above(p);
      if (hi !== null) parts.push(`value < ${ph(hi)}`);
    }
  }
  const scope = vi.scope ? filter?.[vi.scope] : undefined;
  if (typeof scope === 'string') parts.push(`scope = ${ph(scope)}`);
  return parts.join(' AND ');
}

/**
 * How a value condition joins the query. 'in': `uid IN (matching uids)` (PostgreSQL, whose planner
 * has statistics, and writes). On SQLite, which plans without statistics, the read path chooses
 * per query from a bounded count of the matches: 'drive' (few: look the records up by uid and sort
 * them; the caller keeps other conditions off their indexes), 'exists' (many: walk the sort index
 * and probe each record's values by uid, stopping at the page), 'empty' (none).
 */
export type ValueMode = 'in' | 'drive' | 'exists' | 'empty';

/** At most this many matches are looked up by uid; above it the query walks its sort index instead. */
export const DRIVE_MAX = 500;

/** The WHERE condition for one value-index condition in the given mode. */
export function valueClause(
  model: ModelDef,
  vi: ValueIndexDecl,
  cond: Condition,
  filter: Filter | undefined,
  uidCol: string,
  ph: (v: unknown) => string,
  mode: ValueMode = 'in',
): string {
  if (mode === 'empty') return '1 = 0';
  const where = valueWhere(vi, cond, filter, ph);
  if (mode === 'exists')
    return `EXISTS (SELECT 1 FROM ${termsTable(model)} INDEXED BY "${model.table}_terms_uid" WHERE uid = ${uidCol} AND ${where})`;
  return `${uidCol} IN (SELECT uid FROM ${termsTable(model)} WHERE ${where})`;
}

/** SQL counting the matches of one value condition, stopping past DRIVE_MAX. */
export function boundedCountSql(model: ModelDef, where: string): string {
  return `SELECT COUNT(*) FROM (SELECT 1 FROM ${termsTable(model)} WHERE ${where} LIMIT ${DRIVE_MAX + 1})`;
}

export type Term = [name: string, value: string, scope: string, uid: string];

/** The value-index rows of a record. */
export function termsOf(model: ModelDef, rec: Record<string, unknown>): Term[] {
  const out: Term[] = [];
  for (const vi of model.valueIndexes ?? []) {
    const scope = vi.scope ? String(rec[vi.scope] ?? '') : '';
    for (const v of new Set(vi.values(rec).map(clean))) out.push([vi.name, v, scope, String(rec.uid)]);
  }
  return out;
}

/** Value rows written per statement. */
export const BATCH = 200;

function placeholders(dialect: SqlDialect, rows: number, width: number): string {
  let n = 0;
  return Array.from(
    { length: rows },
    () => `(${Array.from({ length: width }, () => (dialect === 'sqlite' ? '?' : `$${++n}`)).join(', ')})`,
  ).join(', ');
}

/** Drops the values of these records (deleted, or about to be rewritten). */
export async function dropValues(manager: EntityManager, dialect: SqlDialect, model: ModelDef, uids: string[]): Promise<void> {
  for (let i = 0; i < uids.length; i += 500) {
    const chunk = uids.slice(i, i + 500);
    const ph = chunk.map((_, j) => (dialect === 'sqlite' ? '?' : `$${j + 1}`)).join(', ');
    await manager.query(`DELETE FROM ${termsTable(model)} WHERE uid IN (${ph})`, chunk);
  }
}

/** (Re)writes the values of these records; `fresh` skips the delete for records just created. */
export async function writeValues(
  manager: EntityManager,
  dialect: SqlDialect,
  model: ModelDef,
  recs: Array<Record<string, unknown>>,
  fresh = false,
): Promise<void> {
  if (!fresh)
    await dropValues(
      manager,
      dialect,
      model,
      recs.map((r) => String(r.uid)),
    );
  const terms = recs.flatMap((r) => termsOf(model, r));
  for (let i = 0; i < terms.length; i += BATCH) {
    const chunk = terms.slice(i, i + BATCH);
    await manager.query(
      `INSERT INTO ${termsTable(model)} (name, value, scope, uid) VALUES ${placeholders(dialect, chunk.length, 4)} ON CONFLICT DO NOTHING`,
      chunk.flat(),
    );
  }
}

async function exists(ds: DataSource, dialect: SqlDialect, model: ModelDef): Promise<boolean> {
  const name = `${model.table}_terms`;
  if (dialect === 'sqlite')
    return ((await ds.query(`SELECT 1 AS x FROM sqlite_master WHERE type = 'table' AND name = ?`, [name])) as unknown[]).length > 0;
  const rows = (await ds.query('SELECT to_regclass($1) AS t', [`"${name}"`])) as Array<{ t: string | null }>;
  return rows[0]?.t !== null && rows[0]?.t !== undefined;
}

/**
 * Creates the side table of each model with value indexes (idempotent, safe when several processes
 * start). A table created here for a model that already has rows is filled from them once.
 */
export async function ensureValueIndexes(
  ds: DataSource,
  dialect: SqlDialect,
  models: ModelDef[],
  readAfter: (m: ModelDef, afterUid: string) => Promise<Array<Record<string, unknown>>>,
): Promise<void> {
  for (const m of models.filter(hasValueIndexes)) {
    if (await exists(ds, dialect, m)) continue;
    const t = termsTable(m);
    const statements =
      dialect === 'sqlite'
        ? [
            `CREATE TABLE IF NOT EXISTS ${t} (name TEXT NOT NULL, value TEXT NOT NULL, scope TEXT NOT NULL, uid TEXT NOT NULL, PRIMARY KEY (name, value, scope, uid)) WITHOUT ROWID`,
            `CREATE INDEX IF NOT EXISTS "${m.table}_terms_uid" ON ${t} (uid)`,
          ]
        : [
            `CREATE TABLE IF NOT EXISTS ${t} (name text NOT NULL, value text COLLATE "C" NOT NULL, scope text NOT NULL, uid varchar(64) NOT NULL, PRIMARY KEY (name, value, scope, uid))`,
            `CREATE INDEX IF NOT EXISTS "${m.table}_terms_uid" ON ${t} (uid)`,
          ];
    for (const sql of statements) {
      try {
        await ds.query(sql);
      } catch (e) {
        // Another process created it between our check and our create (PostgreSQL catalog race).
        if (!/already exists|duplicate key/i.test(String((e as Error).message))) throw e;
      }
    }
    // Records written before this model had value indexes (an upgrade): index them now, in uid order.
    let after = '';
    for (;;) {
      const rows = await readAfter(m, after);
      if (!rows.length) break;
      await writeValues(ds.manager, dialect, m, rows, true);
      after = String(rows[rows.length - 1].uid);
    }
  }
}
