import type { DataSource, EntityManager, ObjectLiteral } from 'typeorm';
import type { ColumnMetadata } from 'typeorm/metadata/ColumnMetadata.js';
import type { ModelDef } from '../model.js';
import type { SqlDialect } from './entities.js';
import type { SelectRunner } from './select.js';

/**
 * INSERT of one record without TypeORM's query builder (it was the largest share of the builder's
 * cost per filed message): the statement text is made once per set of columns given and prepared
 * once, values converted exactly as TypeORM converts them (the driver's preparePersistentValue per
 * column). `skipConflict`: a row that would break a unique key is skipped (ON CONFLICT DO NOTHING)
 * and the answer is 0 rows. Columns left undefined take their defaults, as with TypeORM.
 */
export class Inserter {
  readonly #columns: ColumnMetadata[];
  readonly #table: string;
  readonly #texts = new Map<string, string>();

  constructor(private readonly ds: DataSource, private readonly dialect: SqlDialect, model: ModelDef, private readonly sel: SelectRunner) {
    this.#columns = ds.getMetadata(model.name).columns;
    this.#table = sel.q(model.table);
  }

  /**
   * Runs the statement `build` writes for the columns `rec` gives (made once per variant and set of
   * columns), with the record's values converted as TypeORM converts them, then `extra` parameters.
   */
  #run(manager: EntityManager, rec: ObjectLiteral, variant: string, build: (cols: ColumnMetadata[], ph: (i: number) => string) => string, extra: unknown[] = []): Promise<number> {
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
    return this.#run(manager, rec, skipConflict ? 'skip' : '', (cols, ph) => `${this.#into(cols, ph)}${skipConflict ? ' ON CONFLICT DO NOTHING' : ''}`);
  }

  /**
   * PostgreSQL: INSERT of one record and of its value-index rows (`terms`, at most a few hundred)
   * in one statement (a data-modifying WITH; the rows are written only if the record was), so a
   * record with values needs neither a second round trip nor, outside a transaction, a
   * transaction of its own. Answers 1, or 0 when `skipConflict` skipped the record.
   */
  insertWithTerms(manager: EntityManager, rec: ObjectLiteral, skipConflict: boolean, termsTable: string, terms: string[][]): Promise<number> {
    return this.#run(manager, rec, `terms${terms.length}${skipConflict ? 'skip' : ''}`, (cols, ph) => {
      let n = cols.length;
      const rows = terms.map(() => `(${[0, 1, 2, 3].map(() => ph(n++)).join(', ')})`).join(', ');
      return `WITH r AS (${this.#into(cols, ph)}${skipConflict ? ' ON CONFLICT DO NOTHING' : ''} RETURNING 1), `
        + `v AS (INSERT INTO ${termsTable} (name, value, scope, uid) SELECT x.a, x.b, x.c, x.d FROM (VALUES ${rows}) AS x(a, b, c, d) WHERE EXISTS (SELECT 1 FROM r) ON CONFLICT DO NOTHING) SELECT 1 FROM r`;
    }, terms.flat());
  }

  /**
   * INSERT of one record, or, when a record with its uid exists, its `adding` columns raised by the
   * values given (`"n" = "n" + excluded."n"`), `updatedAt` moved and `version` raised: one statement.
   */
  createOrAdd(manager: EntityManager, rec: ObjectLiteral, adding: string[]): Promise<number> {
    return this.#run(manager, rec, `add:${adding.join('\u0000')}`, (cols, ph) => {
      const sets = adding.map((field) => {
        const c = cols.find((x) => x.propertyName === field);
        if (!c) throw new Error(`createOrAdd ${field}: not a column given`);
        const name = this.sel.q(c.databaseName);
        return `${name} = ${this.#table}.${name} + excluded.${name}`;
      });
      sets.push('"updatedAt" = excluded."updatedAt"', `"version" = ${this.#table}."version" + 1`);
      return `${this.#into(cols, ph)} ON CONFLICT ("uid") DO UPDATE SET ${sets.join(', ')}`;
    });
  }
}

const inserters = new WeakMap<SelectRunner, Inserter>();
/** One inserter per model and store, beside its read-path runner (shared with transactions). */
export function inserterOf(ds: DataSource, dialect: SqlDialect, model: ModelDef, sel: SelectRunner): Inserter {
  let i = inserters.get(sel);
  if (!i) inserters.set(sel, (i = new Inserter(ds, dialect, model, sel)));
  return i;
}
