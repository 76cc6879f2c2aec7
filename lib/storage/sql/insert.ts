import type { DataSource, EntityManager, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata.js';
import type { ModelDef } from '../model.js';
import type { SqlDialect } from './entities.js';
import type { SelectRunner } from './select.js';

/**
 * createOrAdd's conflict clause: on a record with the same uid, its `adding` columns raised by the
 * values given (`"n" = "n" + excluded."n"`), `updatedAt` moved and `version` raised.
 */
function onConflictAdd(sel: SelectRunner, table: string, cols: ColumnMetadata[], adding: string[]): string {
  const sets = adding.map((field) => {
    const c = cols.find((x) => x.propertyName === field);
    if (!c) throw new Error(`createOrAdd ${field}: not a column given`);
    const name = sel.q(c.databaseName);
    return `${name} = ${table}.${name} + excluded.${name}`;
  });
  sets.push('"updatedAt" = excluded."updatedAt"', `"version" = ${table}."version" + 1`);
  return ` ON CONFLICT ("uid") DO UPDATE SET ${sets.join(', ')}`;
}

/**
 * INSERT of one record without TypeORM's query builder, which is costly for a statement run for every
 * filed message (bench/README.md, ingest): the statement text is made once per set of columns given
 * and prepared once, values converted exactly as TypeORM converts them (the driver's
 * preparePersistentValue per column). `skipConflict`: a row that would break a unique key is skipped
 * (ON CONFLICT DO NOTHING) and the answer is 0 rows. Columns left undefined take their defaults, as
 * with TypeORM.
 */
export class Inserter {
  readonly #columns: ColumnMetadata[];
  readonly #table: string;
  readonly #texts = new Map<string, string>();

  constructor(
    private readonly ds: DataSource,
    private readonly dialect: SqlDialect,
    model: ModelDef,
    private readonly sel: SelectRunner,
  ) {
    this.#columns = ds.getMetadata(model.name).columns;
    this.#table = sel.q(model.table);
  }

  /**
   * Runs the statement `build` writes for the columns `rec` gives (made once per variant and set of
   * columns), with the record's values converted as TypeORM converts them, then `extra` parameters.
   */
  #run(
    manager: EntityManager,
    rec: ObjectLiteral,
    variant: string,
    build: (cols: ColumnMetadata[], ph: (i: number) => string) => string,
    extra: unknown[] = [],
  ): Promise<number> {
    const cols = this.#columns.filter((c) => rec[c.propertyName] !== undefined);
    const key = `${variant}\u0001${cols.map((c) => c.propertyName).join('\u0000')}`;
    let sql = this.#texts.get(key);
    if (sql === undefined) {
      sql = build(cols, (i) => (this.dialect === 'postgres' ? `$${i + 1}` : '?'));
      this.#texts.set(key, sql);
    }
    return this.sel.execute(manager, sql, [...cols.map((c) => this.ds.driver.preparePersistentValue(rec[c.propertyName], c)), ...extra]);
  }

  #into(cols: ColumnMetadata[], ph: (i: number) => string): string {
    return `INSERT INTO ${this.#table} (${cols.map((c) => this.sel.q(c.databaseName)).join(', ')}) VALUES (${cols.map((_, i) => ph(i)).join(', ')})`;
  }

  insert(manager: EntityManager, rec: ObjectLiteral, skipConflict: boolean): Promise<number> {
    return this.#run(
      manager,
      rec,
      skipConflict ? 'skip' : '',
      (cols, ph) => `${this.#into(cols, ph)}${skipConflict ? ' ON CONFLICT DO NOTHING' : ''}`,
    );
  }

  /**
   * PostgreSQL: INSERT of one record and of its value-index rows (`terms`, at most a few hundred)
   * in one statement (a data-modifying WITH; the rows are written only if the record was), so a
   * record with values needs neither a second round trip nor, outside a transaction, a
   * transaction of its own. Answers 1, or 0 when `skipConflict` skipped the record.
   */
  insertWithTerms(
    manager: EntityManager,
    rec: ObjectLiteral,
    skipConflict: boolean,
    termsTable: string,
    terms: string[][],
  ): Promise<number> {
    return this.#run(
      manager,
      rec,
      `terms${terms.length}${skipConflict ? 'skip' : ''}`,
      (cols, ph) => {
        let n = cols.length;
        const rows = terms.map(() => `(${[0, 1, 2, 3].map(() => ph(n++)).join(', ')})`).join(', ');
        return (
          `WITH r AS (${this.#into(cols, ph)}${skipConflict ? ' ON CONFLICT DO NOTHING' : ''} RETURNING 1), ` +
          `v AS (INSERT INTO ${termsTable} (name, value, scope, uid) SELECT x.a, x.b, x.c, x.d FROM (VALUES ${rows}) AS x(a, b, c, d) WHERE EXISTS (SELECT 1 FROM r) ON CONFLICT DO NOTHING) SELECT 1 FROM r`
        );
      },
      terms.flat(),
    );
  }

  /**
   * INSERT of one record, or, when a record with its uid exists, its `adding` columns raised by the
   * values given (`"n" = "n" + excluded."n"`), `updatedAt` moved and `version` raised: one statement.
   */
  createOrAdd(manager: EntityManager, rec: ObjectLiteral, adding: string[]): Promise<number> {
    return this.#run(
      manager,
      rec,
      `add:${adding.join('\u0000')}`,
      (cols, ph) => `${this.#into(cols, ph)}${onConflictAdd(this.sel, this.#table, cols, adding)}`,
    );
  }
}

/** A column's value as PostgreSQL's JSON input of the row type takes it (bytea as its hex text form). */
function jsonValue(v: unknown): unknown {
  return Buffer.isBuffer(v) ? `\\x${v.toString('hex')}` : v;
}

/**
 * PostgreSQL: several records in one statement whose text does not depend on how many there are
 * (one prepared statement): the records travel as one JSON array and become rows of the table's
 * own row type (json_populate_recordset), so every value is converted by the column it goes to.
 * Every record must give the same columns (columnsKey groups them).
 */
export class RowsInserter {
  readonly #columns: ColumnMetadata[];
  readonly #table: string;

  constructor(
    private readonly ds: DataSource,
    model: ModelDef,
    private readonly sel: SelectRunner,
  ) {
    this.#columns = ds.getMetadata(model.name).columns;
    this.#table = sel.q(model.table);
  }

  /** The columns a record gives (records with the same key go in one statement). */
  columnsKey(rec: ObjectLiteral): string {
    return this.#columns
      .filter((c) => rec[c.propertyName] !== undefined)
      .map((c) => c.propertyName)
      .join('\u0000');
  }

  #rows(recs: ObjectLiteral[]): { cols: ColumnMetadata[]; json: string } {
    const cols = this.#columns.filter((c) => recs[0][c.propertyName] !== undefined);
    const rows = recs.map((rec) =>
      Object.fromEntries(cols.map((c) => [c.databaseName, jsonValue(this.ds.driver.preparePersistentValue(rec[c.propertyName], c))])),
    );
    return { cols, json: JSON.stringify(rows) };
  }

  #names(cols: ColumnMetadata[]): string[] {
    return cols.map((c) => this.sel.q(c.databaseName));
  }

  #select(cols: ColumnMetadata[]): string {
    const names = this.#names(cols).join(', ');
    return `INSERT INTO ${this.#table} (${names}) SELECT ${names} FROM json_populate_recordset(NULL::${this.#table}, $1::json)`;
  }

  /**
   * The records and their value-index rows (`terms`, written for the records written). `skipConflict`:
   * a record that would break a unique key is left out (inside a transaction, which stays usable).
   * Answers the uids written.
   */
  async insert(
    manager: EntityManager,
    recs: ObjectLiteral[],
    skipConflict: boolean,
    values?: { table: string; terms: string[][] },
  ): Promise<string[]> {
    const { cols, json } = this.#rows(recs);
    const insert = `${this.#select(cols)}${skipConflict ? ' ON CONFLICT DO NOTHING' : ''} RETURNING "uid"`;
    const uids = (rows: Record<string, unknown>[]) => rows.map((r) => String(r.uid));
    if (!values?.terms.length) return uids(await this.sel.rows(manager, insert, [json]));
    const column = (i: number) => values.terms.map((t) => t[i]);
    const sql =
      `WITH r AS (${insert}), ` +
      `v AS (INSERT INTO ${values.table} (name, value, scope, uid) SELECT x.a, x.b, x.c, x.d FROM unnest($2::text[], $3::text[], $4::text[], $5::text[]) AS x(a, b, c, d) WHERE x.d IN (SELECT "uid" FROM r) ON CONFLICT DO NOTHING) ` +
      'SELECT "uid" FROM r';
    return uids(await this.sel.rows(manager, sql, [json, column(0), column(1), column(2), column(3)]));
  }

  /**
   * createOrAdd of several records (distinct uids), made in uid order so that two writers of the
   * same records take their row locks in the same order. The rows already there are locked first
   * (the CTE, forced by the WHERE before any row is inserted): otherwise a writer whose conflict
   * check on uid misses a row another writer is updating goes the speculative-insert way, and that
   * waits in the other unique index (name) for a writer that waits for it — a deadlock (40P01)
   * although both go in uid order (seen a few times in 300 rounds of 20 writers on three rows).
   */
  createOrAdd(manager: EntityManager, recs: ObjectLiteral[], adding: string[]): Promise<number> {
    const { cols, json } = this.#rows(recs);
    const source = `json_populate_recordset(NULL::${this.#table}, $1::json)`;
    const lock = `WITH locked AS (SELECT 1 FROM ${this.#table} WHERE "uid" IN (SELECT "uid" FROM ${source}) ORDER BY "uid" FOR UPDATE) `;
    return this.sel.execute(
      manager,
      `${lock}${this.#select(cols)} WHERE (SELECT count(*) FROM locked) >= 0 ORDER BY "uid"${onConflictAdd(this.sel, this.#table, cols, adding)}`,
      [json],
    );
  }

  /**
   * Each record (uid and the columns to set, the same for all) written onto its row where `where`
   * (column = value) also holds, moving updatedAt and raising version: one statement. Answers the
   * uids written.
   */
  async update(manager: EntityManager, recs: ObjectLiteral[], where: Record<string, unknown>): Promise<string[]> {
    const { cols, json } = this.#rows(recs);
    const params: unknown[] = [json];
    const sets = this.#names(cols.filter((c) => c.propertyName !== 'uid')).map((n) => `${n} = d.${n}`);
    const updatedAt = this.#columns.find((c) => c.propertyName === 'updatedAt')!;
    sets.push(`"updatedAt" = $${params.push(this.ds.driver.preparePersistentValue(new Date(), updatedAt))}`, '"version" = t."version" + 1');
    const conds = Object.entries(where)
      .map(([field, v]) => {
        const c = this.#columns.find((x) => x.propertyName === field);
        if (!c) throw new Error(`update where ${field}: no such column`);
        return ` AND t.${this.sel.q(c.databaseName)} = $${params.push(this.ds.driver.preparePersistentValue(v, c))}`;
      })
      .join('');
    const sql = `UPDATE ${this.#table} AS t SET ${sets.join(', ')} FROM json_populate_recordset(NULL::${this.#table}, $1::json) AS d WHERE t."uid" = d."uid"${conds} RETURNING t."uid"`;
    return (await this.sel.rows(manager, sql, params)).map((r) => String(r.uid));
  }
}

const rowsInserters = new WeakMap<SelectRunner, RowsInserter>();
export function rowsInserterOf(ds: DataSource, model: ModelDef, sel: SelectRunner): RowsInserter {
  let i = rowsInserters.get(sel);
  if (!i) rowsInserters.set(sel, (i = new RowsInserter(ds, model, sel)));
  return i;
}

const inserters = new WeakMap<SelectRunner, Inserter>();
/** One inserter per model and store, beside its read-path runner (shared with transactions). */
export function inserterOf(ds: DataSource, dialect: SqlDialect, model: ModelDef, sel: SelectRunner): Inserter {
  let i = inserters.get(sel);
  if (!i) inserters.set(sel, (i = new Inserter(ds, dialect, model, sel)));
  return i;
}
