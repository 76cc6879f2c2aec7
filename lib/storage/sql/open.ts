// Opening the SQL store: the TypeORM data source for the URL's dialect, retries of a busy SQLite
// file at start-up, the schema (under a cross-process lock on PostgreSQL), then the SqlStore.
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DataSource } from 'typeorm';
import type { ModelDef } from '../model.js';
import { mapError, SqlStore } from './adapter.js';
import { Checkpointer } from './checkpointer.js';
import { entityFor, type SqlDialect } from './entities.js';
import { ensureFullText } from './fulltext.js';
import { underSchemaLock } from './schema-lock.js';
import { SelectRunner } from './select.js';
import { BUSY_TIMEOUT_MS, Mutex } from './sqlite-lock.js';
import { ensureValueIndexes } from './value-index.js';
import { WalSync } from './wal-sync.js';

export interface SqlStoreOptions {
  /** sqlite:/path/file.sqlite, sqlite::memory:, or postgres://… */
  url: string;
  models: ModelDef[];
  synchronize: boolean;
  poolSize?: number;
  /** PostgreSQL: reads as named prepared statements (default true; off behind a pooler that cannot keep them). */
  preparedStatements?: boolean;
}

/** The TypeORM data source for the URL's dialect (not initialised yet); a SQLite file's directory is created. */
function dataSourceFor(opts: SqlStoreOptions, dialect: SqlDialect): DataSource {
  const entities = opts.models.map((m) => entityFor(m, dialect));
  if (dialect === 'postgres') {
    // The schema is synchronized later, under a lock that serialises every process and host.
    return new DataSource({ type: 'postgres', url: opts.url, entities, synchronize: false, poolSize: opts.poolSize ?? 10, logging: false });
  }
  const file = opts.url.replace(/^sqlite:/, '');
  if (!file) throw new Error('sqlite URL needs a file path (sqlite:/path/file.sqlite) or :memory:');
  if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
  return new DataSource({
    type: 'better-sqlite3',
    database: file,
    entities,
    synchronize: opts.synchronize,
    enableWAL: file !== ':memory:',
    logging: false,
    prepareDatabase: (db: { pragma: (s: string) => unknown }) => {
      db.pragma(`busy_timeout = ${BUSY_TIMEOUT_MS}`);
      // NORMAL: a commit writes the WAL without an fsync on the main thread; WalSync syncs it
      // before any write is reported done (wal-sync.ts explains why that is as durable as FULL).
      db.pragma(file === ':memory:' ? 'synchronous = FULL' : 'synchronous = NORMAL');
    },
  });
}

/**
 * Initialises the data source. Several daemons starting on one fresh SQLite file each create the
 * schema; a writer that finds the file locked waits and tries again instead of failing start-up.
 */
async function initialize(ds: DataSource): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await ds.initialize();
      return;
    } catch (e) {
      const busy = /SQLITE_BUSY|database is locked/i.test(`${(e as { code?: string }).code ?? ''} ${(e as Error).message}`);
      if (ds.isInitialized) await ds.destroy().catch(() => undefined);
      if (!busy || attempt >= 8) throw mapError(e);
      await new Promise((r) => setTimeout(r, 100 * attempt + Math.floor(Math.random() * 100)));
    }
  }
}

/** Brings the schema up to date (PostgreSQL: synchronized under the cross-process lock), with full-text and value indexes; closes the data source on failure. */
async function ensureSchema(ds: DataSource, dialect: SqlDialect, opts: SqlStoreOptions, prepared: boolean): Promise<void> {
  const readers = new Map<string, SelectRunner>();
  const ensure = async () => {
    if (dialect === 'postgres' && opts.synchronize) await ds.synchronize();
    await ensureFullText(ds, dialect, opts.models);
    await ensureValueIndexes(ds, dialect, opts.models, (m, after) => {
      let sel = readers.get(m.name);
      if (!sel) readers.set(m.name, (sel = new SelectRunner(ds, dialect, m, prepared)));
      return sel.list(ds.manager, { filter: after ? { uid: { $gt: after } } : {}, sort: [{ field: 'uid', dir: 'asc' }], limit: 500 });
    });
  };
  try {
    await (dialect === 'postgres' ? underSchemaLock(opts.url, ensure) : ensure());
  } catch (e) {
    await ds.destroy().catch(() => undefined);
    throw mapError(e);
  }
}

/** Opens the store: the data source, the schema, then (for a SQLite file) WAL syncing, the writer lock and checkpoints. */
export async function openSqlStore(opts: SqlStoreOptions): Promise<SqlStore> {
  const dialect: SqlDialect = /^postgres(ql)?:/.test(opts.url) ? 'postgres' : 'sqlite';
  const ds = dataSourceFor(opts, dialect);
  await initialize(ds);
  const prepared = opts.preparedStatements ?? true;
  await ensureSchema(ds, dialect, opts, prepared);
  const models = new Map(opts.models.map((m) => [m.name, m]));
  const sqliteFile = dialect === 'sqlite' ? opts.url.replace(/^sqlite:/, '') : null;
  const fileDb = sqliteFile && sqliteFile !== ':memory:' ? sqliteFile : null;
  const durable = fileDb ? new WalSync(fileDb) : null;
  const lock = dialect === 'sqlite' ? new Mutex() : null;
  const checkpoints =
    fileDb && lock
      ? new Checkpointer(fileDb, (ds.driver as unknown as { databaseConnection: { pragma(s: string): unknown } }).databaseConnection, lock)
      : null;
  return new SqlStore({ ds, dialect, models, lock, durable, checkpoints, manager: ds.manager, selects: new Map(), prepared });
}
