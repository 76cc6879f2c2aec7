import { EntitySchema, type EntitySchemaColumnOptions } from 'typeorm';
import type { ColumnKind, ModelDef } from '../model.js';

export type SqlDialect = 'sqlite' | 'postgres';

const TYPES: Record<SqlDialect, Record<ColumnKind, EntitySchemaColumnOptions['type']>> = {
  sqlite: { text: 'text', integer: 'integer', number: 'real', boolean: 'boolean', date: 'datetime', json: 'simple-json', bytes: 'blob' },
  // bigint: quotas, sizes and counters pass 2^31 (the read path turns pg's int8 strings into numbers).
  postgres: {
    text: 'text',
    integer: 'bigint',
    number: 'double precision',
    boolean: 'boolean',
    date: 'timestamptz',
    json: 'simple-json',
    bytes: 'bytea',
  },
};

/** The TypeORM entity of a model: columns from the zod field types, indexes from the declaration. */
export function entityFor(model: ModelDef, dialect: SqlDialect): EntitySchema {
  const t = TYPES[dialect];
  const columns: Record<string, EntitySchemaColumnOptions> = {
    uid: { type: 'varchar', length: 64, primary: true },
    version: { type: 'integer' },
    createdAt: { type: t.date },
    updatedAt: { type: t.date },
  };
  for (const [name, col] of Object.entries(model.columns)) {
    columns[name] = { type: t[col.kind], nullable: col.nullable };
  }
  const indices = (model.indexes ?? []).map((idx) => ({
    name: `idx_${model.table}_${idx.fields.join('_')}`.slice(0, 60),
    columns: idx.fields,
    unique: idx.unique ?? false,
  }));
  if (model.lease) {
    columns.claimedBy = { type: 'varchar', length: 128, nullable: true };
    columns.leaseUntil = { type: t.date, nullable: true };
    indices.push({ name: `idx_${model.table}_leaseUntil`.slice(0, 60), columns: ['leaseUntil'], unique: false });
  }
  return new EntitySchema({ name: model.name, tableName: model.table, columns, indices });
}
