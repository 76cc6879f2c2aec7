import type { DataSource } from 'typeorm';
import type { SqlDialect } from './entities.js';

/** A model whose table lacks columns the model declares (every column when the table is missing). */
export interface SchemaGap {
  model: string;
  table: string;
  tableMissing: boolean;
  missing: string[];
}

// One query for the whole database rather than one per table: doctor runs this against a live
// server with dozens of models, and TypeORM's QueryRunner.getTable would read indexes and keys too.
const COLUMNS: Record<SqlDialect, string> = {
  postgres: 'SELECT table_name AS t, column_name AS c FROM information_schema.columns WHERE table_schema = current_schema()',
  sqlite: "SELECT m.name AS t, p.name AS c FROM sqlite_master m, pragma_table_info(m.name) p WHERE m.type = 'table'",
};

/**
 * Compares the entities' columns (TypeORM metadata built from the models) with the columns the
 * database has. Only missing tables and columns are reported: they break reads and writes, and
 * synchronize adds them. Extra columns (a model field removed) are harmless.
 */
export async function schemaGaps(ds: DataSource, dialect: SqlDialect, run: <R>(fn: () => Promise<R>) => Promise<R>): Promise<SchemaGap[]> {
  const rows = await run(() => ds.query(COLUMNS[dialect]) as Promise<Array<{ t: string; c: string }>>);
  const have = new Map<string, Set<string>>();
  for (const r of rows) {
    if (!have.has(r.t)) have.set(r.t, new Set());
    have.get(r.t)!.add(r.c);
  }
  const gaps: SchemaGap[] = [];
  for (const meta of ds.entityMetadatas) {
    const cols = have.get(meta.tableName);
    const missing = meta.columns.map((c) => c.databaseName).filter((c) => !cols?.has(c));
    if (missing.length) gaps.push({ model: meta.name, table: meta.tableName, tableMissing: !cols, missing });
  }
  return gaps;
}
