import type { DataSource, EntityManager, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata.js';
import type { ModelDef } from '../model.js';
import type { Filter } from '../port.js';
import type { SqlDialect } from './entities.js';
import type { SelectRunner } from './select.js';

/** A condition written as SQL with the statement's placeholders and parameters (a claim's choice of rows). */
export type RawCondition = (ph: (v: unknown) => string, params: unknown[]) => string;

export interface UpdateSpec {
  /** Columns to set by property name (undefined values are left alone, as TypeORM does; an unknown name throws). */
  set: ObjectLiteral;
  /** Columns raised by an amount: `"col" = "col" + amount`. */
  increments?: Record<string, number>;
  /** Every filter and the raw condition must hold (AND). */
  where: Filter[];
  raw?: RawCondition;
}

/**
 * UPDATE and DELETE without TypeORM's query builder, which cost more than the statement itself for
 * the writes made per filed message (folder and mailbox counters, lease claims and releases). The
 * WHERE clause is the read path's (SelectRunner.where: same filters, same value conversions), SET
 * values are converted as TypeORM converts them (the driver's preparePersistentValue per column),
 * and every UPDATE moves `updatedAt` and raises `version` by one. Statements run prepared
 * (SelectRunner.execute / returning): on SQLite on the store's connection, on PostgreSQL as named
 * prepared statements.
 */
export class Writer {
  readonly #columns: Map<string, ColumnMetadata>;
  readonly #table: string;

  constructor(
    private readonly ds: DataSource,
    private readonly dialect: SqlDialect,
    model: ModelDef,
    private readonly sel: SelectRunner,
  ) {
    this.#columns = new Map(ds.getMetadata(model.name).columns.map((c) => [c.propertyName, c]));
    this.#table = sel.q(model.table);
  }

  #ph(params: unknown[]): (v: unknown) => string {
    return (v) => {
      params.push(v);
      return this.dialect === 'postgres' ? `$${params.length}` : '?';
    };
  }

  #where(spec: Pick<UpdateSpec, 'where' | 'raw'>, params: unknown[]): string {
    const parts: string[] = [];
    for (const f of spec.where) {
      const w = this.sel.where(f, params);
      if (w) parts.push(w.slice(' WHERE '.length));
    }
    if (spec.raw) parts.push(spec.raw(this.#ph(params), params));
    return parts.length ? ` WHERE ${parts.join(' AND ')}` : '';
  }

  #column(field: string): ColumnMetadata | undefined {
    return this.#columns.get(field);
  }

  /** A value as the driver stores it in this column (for a raw condition's parameter). */
  value(field: string, v: unknown): unknown {
    return this.ds.driver.preparePersistentValue(v, this.#column(field)!);
  }

  #update(spec: UpdateSpec, params: unknown[]): string {
    const ph = this.#ph(params);
    const sets: string[] = [];
    for (const [field, value] of Object.entries(spec.set)) {
      // Undefined values are left alone (as TypeORM does); the server's own columns are set below or never.
      if (value === undefined || field === 'uid' || field === 'createdAt' || field === 'version' || field === 'updatedAt') continue;
      const col = this.#column(field);
      if (!col) throw new Error(`update ${field}: no such column`);
      sets.push(`${this.sel.q(col.databaseName)} = ${ph(this.ds.driver.preparePersistentValue(value, col))}`);
    }
    for (const [field, delta] of Object.entries(spec.increments ?? {})) {
      const col = this.#column(field);
      if (!col) throw new Error(`increment ${field}: no such column`);
      if (!Number.isFinite(delta)) throw new Error(`increment ${field}: not a number`);
      const name = this.sel.q(col.databaseName);
      // Integer deltas are parameters (one statement text whatever the amount); others are written
      // in (a parameter beside a bigint column would be typed bigint by PostgreSQL).
      sets.push(`${name} = ${name} + ${Number.isSafeInteger(delta) ? ph(delta) : `(${delta})`}`);
    }
    sets.push(
      `"updatedAt" = ${ph(this.ds.driver.preparePersistentValue(new Date(), this.#column('updatedAt')!))}`,
      '"version" = "version" + 1',
    );
    return `UPDATE ${this.#table} SET ${sets.join(', ')}${this.#where(spec, params)}`;
  }

  /** Runs the UPDATE; answers the number of rows written. */
  update(manager: EntityManager, spec: UpdateSpec): Promise<number> {
    const params: unknown[] = [];
    return this.sel.execute(manager, this.#update(spec, params), params);
  }

  /** Runs the UPDATE and answers the rows as written, in the read path's shape (one statement). */
  updateReturning(manager: EntityManager, spec: UpdateSpec): Promise<Record<string, unknown>[]> {
    const params: unknown[] = [];
    return this.sel.returning(manager, this.#update(spec, params), params);
  }

  /**
   * PostgreSQL: the records with these uids (distinct) raised by their own amounts of `fields`, in
   * one statement whose text does not depend on how many there are; their rows are locked in uid
   * order first (FOR UPDATE), so two writers of the same records never wait on each other in
   * opposite orders. Answers the rows as written (absent uids answer none).
   */
  incrementMany(
    manager: EntityManager,
    changes: Array<{ uid: string; deltas: Record<string, number> }>,
    fields: string[],
  ): Promise<Record<string, unknown>[]> {
    const names = fields.map((field) => {
      const col = this.#column(field);
      if (!col) throw new Error(`increment ${field}: no such column`);
      return this.sel.q(col.databaseName);
    });
    const params: unknown[] = [
      changes.map((c) => c.uid),
      ...fields.map((f) =>
        changes.map((c) => {
          const delta = c.deltas[f] ?? 0;
          if (!Number.isFinite(delta)) throw new Error(`increment ${f}: not a number`);
          return delta;
        }),
      ),
    ];
    const updatedAt = params.push(this.ds.driver.preparePersistentValue(new Date(), this.#column('updatedAt')!));
    // The amounts' columns are named d0, d1, … so the RETURNING list's names can only mean the table's.
    const sets = names.map((n, i) => `${n} = t.${n} + d."d${i}"`);
    const arrays = names.map((_, i) => `$${i + 2}::numeric[]`).join(', ');
    const sql =
      `UPDATE ${this.#table} AS t SET ${sets.join(', ')}, "updatedAt" = $${updatedAt}, "version" = t."version" + 1 ` +
      `FROM (SELECT x.* FROM (SELECT "uid" FROM ${this.#table} WHERE "uid" = ANY($1::varchar[]) ORDER BY "uid" FOR UPDATE) AS l ` +
      `JOIN unnest($1::varchar[], ${arrays}) AS x("duid", ${names.map((_, i) => `"d${i}"`).join(', ')}) ON x."duid" = l."uid") AS d WHERE t."uid" = d."duid"`;
    return this.sel.returning(manager, sql, params);
  }

  /** DELETE of the matching rows; answers how many went. */
  delete(manager: EntityManager, where: Filter[]): Promise<number> {
    const params: unknown[] = [];
    return this.sel.execute(manager, `DELETE FROM ${this.#table}${this.#where({ where }, params)}`, params);
  }
}

const writers = new WeakMap<SelectRunner, Writer>();
/** One writer per model and store, beside its read-path runner (shared with transactions). */
export function writerOf(ds: DataSource, dialect: SqlDialect, model: ModelDef, sel: SelectRunner): Writer {
  let w = writers.get(sel);
  if (!w) writers.set(sel, (w = new Writer(ds, dialect, model, sel)));
  return w;
}
