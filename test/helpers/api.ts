import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { signToken, type SignOptions } from '../../lib/auth/index.js';
import { productModels, productRegistry } from '../../lib/catalog.js';
import { loadConfig, type Config, type SettingName } from '../../lib/config/index.js';
import { LocalEventBus } from '../../lib/events/index.js';
import { createLogger, type Logger } from '../../lib/log/index.js';
import type { Deps } from '../../lib/context/index.js';
import type { Store } from '../../lib/storage/index.js';
import { buildApiApp } from '../../daemons/api/app.js';
import { openStoreOf, settingsOf, type Backend, type TestDatabase } from './databases.js';

export const TEST_SECRET = 'test-secret-0123456789abcdef';
export const AUDIENCE = 'mail.test';
export const ISSUER = 'auth.mail.test';

/** An answer's parsed JSON body: tests check it field by field. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
type JsonBody = any;

export interface TestApi {
  url: string;
  deps: Deps;
  config: Config;
  token(opts: Partial<SignOptions> & { uid: string }): Promise<string>;
  /** fetch with a Bearer token (or none) and JSON body handling. */
  call(
    method: string,
    path: string,
    opts?: { token?: string | null; body?: unknown; headers?: Record<string, string> },
  ): Promise<{ status: number; body: JsonBody; headers: Headers }>;
  close(): Promise<void>;
}

export interface TestApiHooks {
  /** Put a test-only decorator around the real store (fault injection, test/reliability). */
  wrapStore?: (store: Store) => Store;
  /** The app's logger (e.g. one writing to a buffer); else silent unless TEST_LOG is set. */
  log?: Logger;
  /** Where the server listens; a random port on 127.0.0.1 by default. */
  listen?: { host: string; port: number };
}

/** A real api app on a random loopback port with a fresh database and real token verification. */
export async function startTestApi(
  backend: Backend,
  values: Partial<Record<SettingName, unknown>> = {},
  hooks: TestApiHooks = {},
): Promise<TestApi> {
  const db: TestDatabase = await backend.open();
  const config = loadConfig({
    env: { NODE_ENV: 'test' },
    values: {
      'auth:secret': TEST_SECRET,
      'auth:options:audience': AUDIENCE,
      'auth:options:issuer': ISSUER,
      'mail:dev_auto_login:enabled': false,
      ...settingsOf(backend, db.url),
      'log:level': 'silent',
      // Suites send thousands of requests from 127.0.0.1; the rate-limit tests set their own limits.
      'rateLimit:max': 1_000_000,
      'rateLimit:authenticated:max': 1_000_000,
      // Nothing leaves this machine: DNS questions (key discovery, DNS checks) go to a loopback port
      // where nothing answers, unless a test starts its own DNS server; never to the system's resolver.
      'mail:dns:nameservers': ['127.0.0.1:9'],
      'mail:dns:check_nameservers': ['127.0.0.1:9'],
      ...values,
    },
  });
  const registry = productRegistry();
  const real = await openStoreOf(backend, db.url, productModels(registry));
  const store = hooks.wrapStore ? hooks.wrapStore(real) : real;
  const deps: Deps = {
    config,
    store,
    events: new LocalEventBus(),
    log: hooks.log ?? createLogger({ level: process.env.TEST_LOG ?? 'silent' }),
  };
  const { app, limits } = buildApiApp(deps, registry);
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(hooks.listen?.port ?? 0, hooks.listen?.host ?? '127.0.0.1', r));
  const url = `http://${hooks.listen?.host ?? '127.0.0.1'}:${(server.address() as AddressInfo).port}`;
  return {
    url,
    deps,
    config,
    token: (opts) => signToken(config, opts),
    async call(method, path, opts = {}) {
      const headers: Record<string, string> = { ...(opts.headers ?? {}) };
      if (opts.token) headers.authorization = `Bearer ${opts.token}`;
      let body: string | undefined;
      if (opts.body !== undefined) {
        headers['content-type'] ??= 'application/json';
        body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      }
      const res = await fetch(url + path, { method, headers, body });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed, headers: res.headers };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await limits.close();
      await real.close();
      await db.drop();
    },
  };
}

/** The people of most tests: an elevated admin, two users, each with a mailbox on example.test. */
export async function seedUsers(api: TestApi) {
  const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
  const alice = await api.token({ uid: 'alice', roles: [] });
  const bob = await api.token({ uid: 'bob', roles: [] });
  const d = await api.call('POST', '/api/mail/domains', { token: admin, body: { name: 'example.test', verified: true } });
  if (d.status !== 201) throw new Error(`seed domain: ${d.status} ${JSON.stringify(d.body)}`);
  const mk = async (address: string, owner: string) => {
    const r = await api.call('POST', '/api/mail/mailboxes', { token: admin, body: { address, owners: [owner], name: owner } });
    if (r.status !== 201) throw new Error(`seed mailbox: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body as { uid: string; version: number };
  };
  const aliceBox = await mk('alice@example.test', 'alice');
  const bobBox = await mk('bob@example.test', 'bob');
  return { admin, alice, bob, aliceBox, bobBox };
}
