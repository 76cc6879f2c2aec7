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

  insert(manager: EntityManager, rec: ObjectLiteral, skipConflict: boolean): Promise<number> {
    const cols = this.#columns.filter((c) => rec[c.propertyName] !== undefined);
    const key = `${skipConflict ? 1 : 0}${cols.map((c) => c.propertyName).join('\u0000')}`;
    let sql = this.#texts.get(key);
    if (sql === undefined) {
      const ph = cols.map((_, i) => (this.dialect === 'postgres' ? `$${i + 1}` : '?')).join(', ');
      sql = `INSERT INTO ${this.#table} (${cols.map((c) => this.sel.q(c.databaseName)).join(', ')}) VALUES (${ph})${skipConflict ? ' ON CONFLICT DO NOTHING' : ''}`;
      this.#texts.set(key, sql);
    }
    return this.sel.execute(manager, sql, cols.map((c) => this.ds.driver.preparePersistentValue(rec[c.propertyName], c)));
  }
}

const inserters = new WeakMap<SelectRunner, Inserter>();
/** One inserter per model and store, beside its read-path runner (shared with transactions). */
export function inserterOf(ds: DataSource, dialect: SqlDialect, model: ModelDef, sel: SelectRunner): Inserter {
  let i = inserters.get(sel);
  if (!i) inserters.set(sel, (i = new Inserter(ds, dialect, model, sel)));
  return i;
}
