import { createHash } from 'node:crypto';
import type { DataSource, EntityManager } from 'typeorm';
import { invalid } from '../../errors/index.js';
import { isoDate, queryableColumns, sqliteDate, StoredDate, type ColumnKind, type ModelDef } from '../model.js';
import type { Condition, Filter, Scalar, SortKey } from '../port.js';
import type { SqlDialect } from './entities.js';
import { KeptResults, PG_SNAPSHOT, pgCurrentSnapshot, pgSnapshotsUsable, type ReadSession } from './kept.js';
import { boundedCountSql, DRIVE_MAX, valueClause, valueIndexOf, valueWhere, type ValueMode } from './value-index.js';

// The read path (get, list, count) builds its SQL here and maps rows itself: TypeORM's query
// builder and entity hydration cost more than the query for a page of 100 rows (bench/list.ts).
// Writes and schema sync stay with TypeORM.

interface RawStatement {
  raw(on: boolean): RawStatement;
  columns(): Array<{ name: string }>;
  all(...params: unknown[]): unknown[][];
}
interface PluckStatement {
  get(): unknown;
}
interface RawSqliteDb {
  prepare(sql: string): RawStatement & { run(...params: unknown[]): { changes: number }; pluck(on: boolean): PluckStatement };
  readonly inTransaction: boolean;
}

type Mapper = (row: unknown[]) => Record<string, unknown>;

/** A pg client or pool: a query config with a name runs as a prepared statement of that connection. */
interface PgQuery {
  name?: string;
  text: string;
  values: unknown[];
  rowMode?: 'array';
}
interface PgQueryable {
  query(q: PgQuery): Promise<{ rows: unknown[]; rowCount: number | null }>;
}

/**
 * PostgreSQL: the prepared-statement name of a read's SQL text (a digest of it, so one name always
 * means one text on every connection). The read path's texts come from a bounded set of shapes; past
 * PREPARED_MAX distinct texts in a process, further ones run unnamed, so no connection's set of
 * prepared statements grows without bound (IN lists of ever new lengths, say).
 */
const PREPARED_MAX = 2000;
const preparedNames = new Map<string, string>();
function preparedName(sql: string): string | undefined {
  let name = preparedNames.get(sql);
  if (name === undefined && preparedNames.size < PREPARED_MAX)
    preparedNames.set(sql, (name = `svc_${createHash('sha1').update(sql).digest('hex')}`));
  return name;
}

/**
 * PostgreSQL reads select one JSON array per row (json_build_array) up to this many columns, its
 * argument limit. The pg driver parses a DataRow field by field (a string and a type parser call
 * each), a large share of the list route's CPU for a page of 100 ten-column records; one JSON.parse
 * per row of the same values costs a fraction of it (bench/README.md, list). Values keep the read
 * path's shapes: dates as the ISO text to_char formats, bigint and double precision as JSON numbers
 * (NaN and ±Infinity as strings, which the mapper turns into numbers), simple-json as its text.
 */
const PG_JSON_ROW_MAX_COLUMNS = 100;

/** The values of JSON rows (first column: the text of a json_build_array) as arrays in column order. */
function jsonValues(rows: unknown[][]): unknown[][] {
  const values = new Array<unknown[]>(rows.length);
  for (let i = 0; i < rows.length; i++) values[i] = JSON.parse(rows[i][0] as string) as unknown[];
  return values;
}

const STATEMENT_CACHE = 256;

/**
 * SQLite read results are kept, as the raw rows (arrays of primitives) the driver returned, while
 * the database is unchanged: `total_changes()` moves with every write on this connection (ours),
 * `PRAGMA data_version` with every commit by another connection (the worker, the CLI, another
 * process). Both are read (cheaply) before a kept result is served, unless the caller's session (kept.ts,
 * ReadSession) already holds the stamp it was kept with; any change anywhere invalidates every kept result.
 * Nothing is kept or served inside a transaction (a rollback does not move the counter).
 * Callers never share objects: rows are mapped afresh, or (no JSON columns) copied from the mapped rows.
 */
// Two single-value statements read cheaper than one two-column row of pragma_data_version (bench/README.md, list).
const CHANGES_SQL = 'SELECT total_changes()';
const DATA_VERSION_SQL = 'PRAGMA data_version';

export class SelectRunner {
  readonly #cols: Array<[string, ColumnKind]>;
  readonly #kinds: Record<string, ColumnKind>;
  readonly #table: string;
  /**
   * What a read selects. PostgreSQL formats timestamps as ISO text itself: parsing its default
   * output into a Date and formatting that again for JSON would be most of a list answer's cost.
   */
  readonly #select: string;
  /** PostgreSQL: each row comes as the text of one JSON array of its values, in column order (see PG_JSON_ROW_MAX_COLUMNS). */
  readonly #jsonRows: boolean = false;
  readonly #statements = new Map<string, { stmt: RawStatement; map: Mapper }>();
  /** Kept read results (kept.ts): SQLite stamps, PostgreSQL snapshots. */
  readonly #kept: KeptResults;
  #stamp: { changes: PluckStatement; version: PluckStatement } | null = null;

  constructor(
    private readonly ds: DataSource,
    private readonly dialect: SqlDialect,
    readonly model: ModelDef,
    private readonly prepared = true,
  ) {
    const cols = queryableColumns(model);
    this.#kinds = Object.fromEntries(Object.entries(cols).map(([k, c]) => [k, c.kind]));
    this.#cols = Object.entries(this.#kinds);
    this.#table = this.q(model.table);
    // Without JSON columns a mapped row holds only primitives and dates: a shallow copy is a private copy.
    this.#kept = new KeptResults(!this.#cols.some(([, kind]) => kind === 'json' || kind === 'bytes'));
    if (dialect === 'postgres') {
      const values = this.#cols.map(([f, kind]) =>
        kind === 'date'
          ? `to_char(${this.q(f)} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`
          : kind === 'bytes'
            ? `encode(${this.q(f)}, 'base64')`
            : this.q(f),
      );
      // One JSON array per row: the driver reads one text field per row instead of one per column.
      // json_build_array takes at most 100 arguments; a wider model is read column by column.
      this.#jsonRows = values.length <= PG_JSON_ROW_MAX_COLUMNS;
      this.#select = this.#jsonRows
        ? `json_build_array(${values.join(', ')})::text`
        : values.map((v, i) => `${v} AS ${this.q(this.#cols[i][0])}`).join(', ');
    } else {
      this.#select = '*';
    }
  }

  q(name: string): string {
    return `"${name.replace(/"/g, '""')}"`;
  }

  #value(field: string, v: Scalar): unknown {
    if (v === null) return null;
    const kind = this.#kinds[field];
    if (kind === 'date') {
      const d = v instanceof Date ? v : new Date(v as string | number);
      // TypeORM's SQLite datetime format (UTC, space separator) so comparisons match stored text.
      return this.dialect === 'sqlite' ? d.toISOString().replace('T', ' ').replace('Z', '') : d;
    }
    if (kind === 'boolean' && this.dialect === 'sqlite') return v ? 1 : 0;
    return v;
  }

  #col(field: string): string {
    const kind = this.#kinds[field];
    if (!kind || kind === 'json' || kind === 'bytes') throw invalid(`cannot filter or sort on ${field}`);
    return this.q(field);
  }

  /** WHERE clause and its parameters; placeholders per dialect. `modes`: how value conditions join (see #valueModes). */
  where(filter: Filter | undefined, params: unknown[], modes?: Map<string, ValueMode>): string {
    const ph = (v: unknown) => {
      params.push(v);
      return this.dialect === 'postgres' ? `$${params.length}` : '?';
    };
    // Records looked up by uid from a value index: other conditions must not pull in another index (SQLite's unary +).
    const noIndex = [...(modes?.values() ?? [])].includes('drive');
    const parts: string[] = [];
    for (const [field, cond] of Object.entries(filter ?? {})) {
      const vi = valueIndexOf(this.model, field);
      parts.push(
        vi
          ? valueClause(this.model, vi, cond, filter, `${this.#table}."uid"`, ph, modes?.get(field))
          : this.#cond(field, cond, ph, noIndex),
      );
    }
    return parts.length ? ` WHERE ${parts.join(' AND ')}` : '';
  }

  /**
   * SQLite only (it plans without statistics): per value condition, a bounded count of its matches
   * picks the plan — none: empty; the fewest, if at most DRIVE_MAX: drive by uid; else: exists.
   */
  #valueModes(filter: Filter | undefined): Map<string, ValueMode> | undefined {
    if (this.dialect !== 'sqlite' || !this.model.valueIndexes?.length) return undefined;
    let modes: Map<string, ValueMode> | undefined;
    let fewest: [string, number] | null = null;
    for (const [field, cond] of Object.entries(filter ?? {})) {
      const vi = valueIndexOf(this.model, field);
      if (!vi) continue;
      const params: unknown[] = [];
      const where = valueWhere(vi, cond, filter, (v) => {
        params.push(v);
        return '?';
      });
      const n = Number(
        this.#db()
          .prepare(boundedCountSql(this.model, where))
          .raw(true)
          .all(...params)[0][0],
      );
      (modes ??= new Map()).set(field, n === 0 ? 'empty' : 'exists');
      if (n > 0 && n <= DRIVE_MAX && (!fewest || n < fewest[1])) fewest = [field, n];
    }
    if (fewest && ![...modes!.values()].includes('empty')) modes!.set(fewest[0], 'drive');
    return modes;
  }

  #db(): RawSqliteDb {
    return (this.ds.driver as unknown as { databaseConnection: RawSqliteDb }).databaseConnection;
  }

  #cond(field: string, cond: Condition, ph: (v: unknown) => string, noIndex = false): string {
    const c = noIndex ? `+${this.#col(field)}` : this.#col(field);
    if (cond === null) return `${c} IS NULL`;
    if (typeof cond !== 'object' || cond instanceof Date) return `${c} = ${ph(this.#value(field, cond))}`;
    if ('$in' in cond || '$nin' in cond) {
      const isIn = '$in' in cond;
      const list = (isIn ? cond.$in : (cond as { $nin: Scalar[] }).$nin) ?? [];
      if (!list.length) return isIn ? '1 = 0' : '1 = 1';
      return `${c} ${isIn ? 'IN' : 'NOT IN'} (${list.map((v) => ph(this.#value(field, v))).join(', ')})`;
    }
    if ('$ne' in cond) return cond.$ne === null ? `${c} IS NOT NULL` : `(${c} <> ${ph(this.#value(field, cond.$ne))} OR ${c} IS NULL)`;
    const ops: Array<[string, string]> = [
      ['$gt', '>'],
      ['$gte', '>='],
      ['$lt', '<'],
      ['$lte', '<='],
    ];
    const parts = ops
      .filter(([op]) => (cond as Record<string, unknown>)[op] !== undefined)
      .map(([op, sql]) => `${c} ${sql} ${ph(this.#value(field, (cond as Record<string, Scalar>)[op]))}`);
    if (!parts.length) throw invalid(`unsupported condition on ${field}`);
    return parts.join(' AND ');
  }

  orderBy(sort: SortKey[] | undefined): string {
    const keys = [...(sort ?? [])];
    if (!keys.some((k) => k.field === 'uid')) keys.push({ field: 'uid', dir: keys[0]?.dir ?? 'asc' });
    // Qualified: an unqualified name would be the select list's alias (a formatted date on PostgreSQL), not the indexed column.
    return ` ORDER BY ${keys.map((k) => `${this.#table}.${this.#col(k.field)} ${k.dir === 'desc' ? 'DESC' : 'ASC'}`).join(', ')}`;
  }

  /** A row mapper for rows that come as arrays in the order of `fields` (both engines). */
  #mapper(fields: string[]): Mapper {
    const kinds = fields.map((f) => this.#kinds[f]);
    const sqlite = this.dialect === 'sqlite';
    return (row) => {
      const out: Record<string, unknown> = {};
      for (let i = 0; i < fields.length; i++) {
        const v = row[i];
        const kind = kinds[i];
        if (v === null || v === undefined) out[fields[i]] = null;
        else if (kind === 'json') out[fields[i]] = typeof v === 'string' ? JSON.parse(v) : v;
        else if (kind === 'date')
          out[fields[i]] = sqlite ? sqliteDate(String(v)) : v instanceof Date ? new StoredDate(v.getTime()) : isoDate(String(v));
        else if (kind === 'boolean') out[fields[i]] = Boolean(v);
        else if (kind === 'bytes') out[fields[i]] = Buffer.isBuffer(v) ? v : Buffer.from(String(v), 'base64');
        else if ((kind === 'integer' || kind === 'number') && typeof v === 'string') out[fields[i]] = Number(v);
        else if (kind !== undefined) out[fields[i]] = v;
      }
      return out;
    };
  }

  #pgMapper: Mapper | null = null;
  #pgMap(): Mapper {
    return (this.#pgMapper ??= this.#mapper(this.#cols.map(([f]) => f)));
  }

  /**
   * Inside a transaction, its connection; otherwise straight to the pool (no QueryRunner per read).
   * Reads run as named prepared statements (see preparedName): the server parses and plans each once
   * per connection instead of for every query (unless datastores:sql:prepared_statements is off).
   */
  async #pg(manager: EntityManager, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return (await this.#pgQuery(manager, sql, params)) as Record<string, unknown>[];
  }

  /** Rows of this.#select as arrays in column order (no object per row for the driver to build), mapped. */
  async #pgRecords(manager: EntityManager, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    const rows = (await this.#pgQuery(manager, sql, params, 'array')) as unknown[][];
    return (this.#jsonRows ? jsonValues(rows) : rows).map(this.#pgMap());
  }

  async #pgQuery(manager: EntityManager, sql: string, params: unknown[], rowMode?: 'array'): Promise<unknown[]> {
    return (await this.#pgResult(manager, sql, params, rowMode)).rows;
  }

  async #pgResult(
    manager: EntityManager,
    sql: string,
    params: unknown[],
    rowMode?: 'array',
  ): Promise<{ rows: unknown[]; rowCount: number | null }> {
    const runner = manager.queryRunner as unknown as { connect(): Promise<PgQueryable> } | undefined;
    const target: PgQueryable = runner ? await runner.connect() : (this.ds.driver as unknown as { master: PgQueryable }).master;
    return target.query({ name: this.prepared ? preparedName(sql) : undefined, text: sql, values: params, rowMode });
  }

  readonly #writes = new Map<string, { run(...params: unknown[]): { changes: number } }>();

  /**
   * A write statement with driver-ready parameters (no RETURNING), prepared once (SQLite: on the
   * store's one connection, inside the caller's lock or transaction; PostgreSQL: a named prepared
   * statement). Answers the number of rows it wrote.
   */
  async execute(manager: EntityManager, sql: string, params: unknown[]): Promise<number> {
    if (this.dialect === 'postgres') return (await this.#pgResult(manager, sql, params)).rowCount ?? 0;
    let stmt = this.#writes.get(sql);
    if (!stmt) {
      if (this.#writes.size >= STATEMENT_CACHE) this.#writes.delete(this.#writes.keys().next().value!);
      this.#writes.set(sql, (stmt = this.#db().prepare(sql)));
    }
    return stmt.run(...params).changes;
  }

  /** PostgreSQL: the rows a statement answers as the driver reads them (prepared as execute's statements). */
  rows(manager: EntityManager, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    return this.#pg(manager, sql, params);
  }

  /** `tail`: what follows the select list (FROM …). */
  async #all(manager: EntityManager, tail: string, params: unknown[], session?: ReadSession): Promise<Record<string, unknown>[]> {
    if (this.dialect === 'sqlite') {
      const sql = `SELECT ${this.#select}${tail}`;
      const entry = this.#sqliteStatement(sql);
      return this.#cachedRows(sql, params, entry.stmt, entry.map, session);
    }
    return this.#pgRead(manager, tail, params, session);
  }

  /** A prepared SQLite statement answering raw rows, and the mapper of its columns (most recently used kept). */
  #sqliteStatement(sql: string): { stmt: RawStatement; map: Mapper } {
    let entry = this.#statements.get(sql);
    if (!entry) {
      const stmt = this.#db().prepare(sql).raw(true);
      entry = { stmt, map: this.#mapper(stmt.columns().map((c) => c.name)) };
      if (this.#statements.size >= STATEMENT_CACHE) this.#statements.delete(this.#statements.keys().next().value!);
      this.#statements.set(sql, entry);
    }
    return entry;
  }

  #cachedRows(sql: string, params: unknown[], stmt: RawStatement, map: Mapper, session?: ReadSession): Record<string, unknown>[] {
    const db = this.#db();
    if (db.inTransaction) return stmt.all(...params).map(map);
    const key = `${sql}\u0000${JSON.stringify(params)}`;
    const hit = this.#kept.touch(key);
    if (hit && session?.stamp === hit.stamp) return this.#kept.serve(hit, map);
    if (!session && !this.#kept.keeping()) return stmt.all(...params).map(map);
    const st = (this.#stamp ??= { changes: db.prepare(CHANGES_SQL).pluck(true), version: db.prepare(DATA_VERSION_SQL).pluck(true) });
    const stamp = `${st.changes.get() as number}:${st.version.get() as number}`;
    if (session) session.stamp = stamp;
    if (hit) this.#kept.checked(hit.stamp === stamp);
    if (hit?.stamp === stamp) return this.#kept.serve(hit, map);
    const rows = stmt.all(...params);
    this.#kept.keep(key, stamp, rows);
    return rows.map(map);
  }

  /**
   * PostgreSQL: a read outside a transaction is kept with the snapshot it was read at (see
   * PG_SNAPSHOT). Asked again, the kept rows are served when the current snapshot is the same one:
   * one round trip answering a few bytes instead of the rows. When checks rarely find their result
   * still current (steady writes), most reads are plain reads (KeptResults.keeping).
   */
  async #pgRead(manager: EntityManager, tail: string, params: unknown[], session?: ReadSession): Promise<Record<string, unknown>[]> {
    this.#pgSnapshots ??= await pgSnapshotsUsable(this.ds);
    if (manager.queryRunner || !this.#jsonRows || !this.#pgSnapshots)
      return this.#pgRecords(manager, `SELECT ${this.#select}${tail}`, params);
    const map = this.#pgMap();
    const key = `${tail}\u0000${JSON.stringify(params)}`;
    const hit = this.#kept.peek(key);
    if (hit && session?.stamp === hit.stamp) return this.#kept.serve(this.#kept.touch(key)!, map);
    // A request's reads always go through the kept results (its later reads share the snapshot);
    // other callers' only while checks are worth it.
    if (!session && !this.#kept.keeping()) return this.#pgRecords(manager, `SELECT ${this.#select}${tail}`, params);
    // A session that already holds a snapshot other than the result's needs no check: the snapshot
    // it would answer is that one or a later one, never the result's again (snapshots only move on).
    if (hit && !session?.stamp) {
      // Shared with the other callers of this turn of the event loop (pgCurrentSnapshot).
      const snapshot = await pgCurrentSnapshot(this.ds);
      if (session && snapshot) session.stamp = snapshot;
      const current = snapshot === hit.stamp;
      this.#kept.checked(current);
      // Still kept (another read may have replaced it meanwhile) and read at this very snapshot.
      if (current && this.#kept.peek(key) === hit) return this.#kept.serve(this.#kept.touch(key)!, map);
    }
    const rows = (await this.#pgQuery(manager, `SELECT ${this.#select}, ${PG_SNAPSHOT}${tail}`, params, 'array')) as unknown[][];
    const values = jsonValues(rows);
    if (rows.length) {
      this.#kept.keep(key, rows[0][1] as string, values);
      if (session) session.stamp = rows[0][1] as string;
    }
    return values.map(map);
  }

  #pgSnapshots: boolean | undefined;

  /** Reads answered from a kept result (diagnostics and tests). */
  get servedKept(): number {
    return this.#kept.served;
  }

  /** Reads outside a request that skipped the kept results (steady writes; KeptResults.keeping). */
  get plainReads(): number {
    return this.#kept.plainReads;
  }

  /** `extra` adds one more condition (full-text match) built with the same placeholders. */
  async list(
    manager: EntityManager,
    q: { filter?: Filter; sort?: SortKey[]; limit?: number; offset?: number },
    extra?: (ph: (v: unknown) => string) => string,
    session?: ReadSession,
  ): Promise<Record<string, unknown>[]> {
    const params: unknown[] = [];
    let where = this.where(q.filter, params, this.#valueModes(q.filter));
    if (extra) {
      const cond = extra((v) => {
        params.push(v);
        return this.dialect === 'postgres' ? `$${params.length}` : '?';
      });
      where = where ? `${where} AND ${cond}` : ` WHERE ${cond}`;
    }
    let tail = ` FROM ${this.#table}${where}${this.orderBy(q.sort)}`;
    if (q.limit !== undefined) tail += ` LIMIT ${Math.max(0, Math.trunc(q.limit))}`;
    if (q.offset)
      tail += `${q.limit === undefined && this.dialect === 'sqlite' ? ' LIMIT -1' : ''} OFFSET ${Math.max(0, Math.trunc(q.offset))}`;
    return this.#all(manager, tail, params, session);
  }

  /** The uids of the records matching the filter (writes that must know which records they touch). */
  async uids(manager: EntityManager, filter?: Filter): Promise<string[]> {
    const params: unknown[] = [];
    const sql = `SELECT "uid" FROM ${this.#table}${this.where(filter, params, this.#valueModes(filter))}`;
    if (this.dialect === 'sqlite') {
      const stmt = (this.ds.driver as unknown as { databaseConnection: RawSqliteDb }).databaseConnection.prepare(sql).raw(true);
      return stmt.all(...params).map((r) => String(r[0]));
    }
    return (await this.#pg(manager, sql, params)).map((r) => String(r.uid));
  }

  async #count(manager: EntityManager, sql: string, params: unknown[]): Promise<number> {
    if (this.dialect === 'sqlite') {
      const stmt = (this.ds.driver as unknown as { databaseConnection: RawSqliteDb }).databaseConnection.prepare(sql).raw(true);
      return Number(stmt.all(...params)[0][0]);
    }
    const rows = (await this.#pg(manager, sql, params)) as Array<{ n: string | number }>;
    return Number(rows[0]?.n ?? 0);
  }

  /**
   * A write statement (UPDATE …) that answers the rows it wrote, in the read path's shape, so a write
   * that must return the record is one statement, not a write and a read (on PostgreSQL one round
   * trip). SQLite: on the store's one connection, inside the caller's lock or transaction; never cached.
   */
  async returning(manager: EntityManager, sql: string, params: unknown[]): Promise<Record<string, unknown>[]> {
    if (this.dialect === 'postgres') return this.#pgRecords(manager, `${sql} RETURNING ${this.#select}`, params);
    const { stmt, map } = this.#sqliteStatement(`${sql} RETURNING *`);
    // better-sqlite3 binds no booleans (TypeORM's runner makes them 0/1 the same way).
    return stmt.all(...params.map((p) => (typeof p === 'boolean' ? Number(p) : p))).map(map);
  }

  async get(manager: EntityManager, uid: string, session?: ReadSession): Promise<Record<string, unknown> | null> {
    const rows = await this.#all(manager, ` FROM ${this.#table} WHERE "uid" = ${this.dialect === 'postgres' ? '$1' : '?'}`, [uid], session);
    return rows[0] ?? null;
  }

  async count(manager: EntityManager, filter?: Filter): Promise<number> {
    const params: unknown[] = [];
    const rows = await this.#count(
      manager,
      `SELECT COUNT(*) AS n FROM ${this.#table}${this.where(filter, params, this.#valueModes(filter))}`,
      params,
    );
    return Number(rows);
  }
}
