import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import mongoose from 'mongoose';
import pg from 'pg';
import type { Config, SettingName } from '../../lib/config/index.js';
import type { ModelDef, Store } from '../../lib/storage/index.js';
import { openDocumentStore } from '../../lib/storage/document/open.js';
import { openSqlStore } from '../../lib/storage/sql/open.js';
import { requirePeer } from './peers.js';

const ADMIN_URL = process.env.SVCMAIL_TEST_PG_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres';

/**
 * Whether PostgreSQL answers at SVCMAIL_TEST_PG_ADMIN_URL; when it does not, the file says so in
 * one line and skips what needs it, or in CI fails (test/helpers/peers.ts).
 */
export async function postgresAvailable(): Promise<boolean> {
  const client = new pg.Client({ connectionString: ADMIN_URL, connectionTimeoutMillis: 2000 });
  try {
    await client.connect();
    await client.query('SELECT 1');
    return requirePeer('postgres', true);
  } catch (e) {
    return requirePeer('postgres', false, `not reachable at ${ADMIN_URL} (${(e as Error).message})`);
  } finally {
    await client.end().catch(() => undefined);
  }
}

export interface TestDatabase {
  url: string;
  drop(): Promise<void>;
}

/** A fresh PostgreSQL database per run so runs never collide; dropped afterwards. */
export async function freshPostgres(): Promise<TestDatabase> {
  const name = `svcmail_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: ADMIN_URL });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${name}`);
  await admin.end();
  const url = ADMIN_URL.replace(/\/[^/]*$/, `/${name}`);
  return {
    url,
    async drop() {
      const c = new pg.Client({ connectionString: ADMIN_URL });
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}

/** Where Debian's PostgreSQL puts its Unix socket. */
export const PG_SOCKET_DIR = '/var/run/postgresql';

/**
 * The same database over the server's Unix socket when the server runs on this machine and has one
 * (the host in the URL is 127.0.0.1 or localhost); else the URL unchanged. A query's round trip
 * over the socket skips the loopback TCP stack (benchmarks; docs: datastores:sql:url).
 */
export function overLocalSocket(url: string): string {
  const u = new URL(url);
  if (!['127.0.0.1', 'localhost', '[::1]'].includes(u.hostname) || !existsSync(`${PG_SOCKET_DIR}/.s.PGSQL.${u.port || 5432}`)) return url;
  return `${u.protocol}//${u.username ? `${u.username}@` : ''}${encodeURIComponent(PG_SOCKET_DIR)}${u.port ? `:${u.port}` : ''}${u.pathname}${u.search}`;
}

/** A fresh SQLite file in a temporary directory. */
export function freshSqlite(): TestDatabase {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-sqlite-'));
  return { url: `sqlite:${join(dir, 'test.sqlite')}`, drop: async () => rmSync(dir, { recursive: true, force: true }) };
}

export interface Backend {
  name: string;
  open(): Promise<TestDatabase>;
  /** The settings that point svcmail at a database of this backend (default: datastores:sql:url). */
  settings?(url: string): Partial<Record<SettingName, unknown>>;
  /** The store on a database of this backend, collections/tables made from the models (default: the SQL store). */
  openStore?(url: string, models: ModelDef[]): Promise<Store>;
}

/** The settings that point svcmail at a database of the backend. */
export const settingsOf = (backend: Backend, url: string): Partial<Record<SettingName, unknown>> =>
  backend.settings?.(url) ?? { 'datastores:sql:url': url };

/** The backend's store on one of its databases, made from the models. */
export const openStoreOf = (backend: Backend, url: string, models: ModelDef[]): Promise<Store> =>
  backend.openStore?.(url, models) ?? openSqlStore({ url, models, synchronize: true });

/** The SQL backends every integration test runs on: SQLite always, PostgreSQL when it answers (see postgresAvailable). */
export async function sqlBackends(): Promise<Backend[]> {
  const list: Backend[] = [{ name: 'sqlite', open: async () => freshSqlite() }];
  if (await postgresAvailable()) list.push({ name: 'postgres', open: freshPostgres });
  return list;
}

const MONGO_URL = process.env.SVCMAIL_TEST_MONGO_URL ?? '';
let mongoSaid = false;

/**
 * The document backend when SVCMAIL_TEST_MONGO_URL names a MongoDB replica set (none can be installed
 * on these machines: ../shared/TESTING.md). Unset: none, and one line saying so (the translation
 * tests, test/unit/storage/document-*.test.ts, run instead). Set but not answering or not a replica
 * set: in CI a failure, elsewhere a skip with one line (test/helpers/peers.ts).
 */
export async function documentBackends(): Promise<Backend[]> {
  if (!MONGO_URL) {
    if (!mongoSaid && process.env.SVCMAIL_TEST_QUIET_MONGO !== '1')
      process.stdout.write(
        'document backend not run: SVCMAIL_TEST_MONGO_URL names no MongoDB replica set (translation tests run instead)\n',
      );
    mongoSaid = true;
    return [];
  }
  try {
    const probe = await openDocumentStore({ url: MONGO_URL, models: [], synchronize: false, poolSize: 1, timeoutMs: 3000 });
    await probe.close();
  } catch (e) {
    // In CI this throws (the file fails); elsewhere it says why in one line and the file runs without it.
    requirePeer(
      'mongodb',
      false,
      `not usable at ${MONGO_URL.replace(/\/\/[^@/]*@/, '//')} (${(e as Error).message})`,
      'start a replica set and set SVCMAIL_TEST_MONGO_URL',
    );
    return [];
  }
  return [
    {
      name: 'document',
      open: freshMongo,
      settings: (url) => ({ datastore: 'document', 'datastores:document:url': url }),
      openStore: (url, models) => openDocumentStore({ url, models, synchronize: true }),
    },
  ];
}

/** The replica set the tests and benchmarks may use (SVCMAIL_TEST_MONGO_URL), or null. */
export const mongoTestUrl = (): string | null => MONGO_URL || null;

/** Why the document backend is not measured or tested: no replica set is named. */
export const NO_MONGO = 'skipped: SVCMAIL_TEST_MONGO_URL names no MongoDB replica set (none can be installed on this machine)';

/** A fresh database on the replica set per run (the URL's path replaced), dropped afterwards. */
export async function freshMongo(): Promise<TestDatabase> {
  const name = `svcmail_t_${randomBytes(6).toString('hex')}`;
  const url = MONGO_URL.replace(/^(mongodb(\+srv)?:\/\/[^/?]+)(\/[^?]*)?/, `$1/${name}`);
  return {
    url,
    async drop() {
      const conn = await mongoose.createConnection(url, { serverSelectionTimeoutMS: 3000 }).asPromise();
      try {
        await conn.dropDatabase();
      } finally {
        await conn.close();
      }
    },
  };
}

/**
 * Every backend a test that runs per engine runs on: the SQL ones, MongoDB when SVCMAIL_TEST_MONGO_URL
 * names a replica set, and — with `standIn`, or SVCMAIL_TEST_STAND_IN=1 — the document adapter over
 * the in-memory stand-in (test/helpers/mongo-memory.ts). A file whose daemons run as processes of
 * their own says `spawns`: they cannot reach an in-memory database, so it never gets the stand-in.
 */
export async function storeBackends(opts: { standIn?: boolean; spawns?: boolean } = {}): Promise<Backend[]> {
  const standIn = !opts.spawns && (opts.standIn || process.env.SVCMAIL_TEST_STAND_IN === '1');
  const extra = standIn ? [(await import('./mongo-memory.js')).memoryDocumentBackend()] : [];
  return [...(await sqlBackends()), ...(await documentBackends()), ...extra];
}

/** The settings naming the datastore a running test app uses, for the daemons a test starts beside it. */
export function datastoreOf(config: Config): Partial<Record<SettingName, unknown>> {
  return config.get('datastore') === 'document'
    ? { datastore: 'document', 'datastores:document:url': config.get('datastores:document:url') }
    : { 'datastores:sql:url': config.get('datastores:sql:url') };
}
