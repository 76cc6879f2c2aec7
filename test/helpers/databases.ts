import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
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
}

/** The SQL backends every integration test runs on: SQLite always, PostgreSQL when it answers (see postgresAvailable). */
export async function sqlBackends(): Promise<Backend[]> {
  const list: Backend[] = [{ name: 'sqlite', open: async () => freshSqlite() }];
  if (await postgresAvailable()) list.push({ name: 'postgres', open: freshPostgres });
  return list;
}
