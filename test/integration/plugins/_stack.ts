// A real api app and a real protocols app on loopback ports, sharing one fresh database and one
// event bus, the api's front door pointed at the protocols app (listen:protocols), both built with
// the same plugin list (the shipped plugins plus the test plugins of _plugins.ts).
import { freePort } from '../../helpers/ports.js';
import { createServer, type Server } from 'node:http';
import type { Express } from 'express';
import { signToken, type SignOptions } from '../../../lib/auth/index.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { loadConfig, type Config, type SettingName } from '../../../lib/config/index.js';
import { LocalEventBus } from '../../../lib/events/index.js';
import { createLogger } from '../../../lib/log/index.js';
import type { PluginHost, PluginManifest } from '../../../lib/plugins/index.js';
import type { Deps } from '../../../lib/context/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { buildApiApp } from '../../../daemons/api/app.js';
import { buildProtocolsApp } from '../../../daemons/protocols/app.js';
import type { Backend } from '../../helpers/databases.js';
import { AUDIENCE, ISSUER, TEST_SECRET } from '../../helpers/api.js';

export interface Answer {
  status: number;
  text: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
  json: any;
  headers: Headers;
}

export async function request(
  url: string,
  opts: { method?: string; token?: string | null; body?: string | Buffer; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...(opts.headers ?? {}) };
  if (opts.token) headers.authorization = `Bearer ${opts.token}`;
  const r = await fetch(url, { method: opts.method ?? (opts.body === undefined ? 'GET' : 'POST'), headers, body: opts.body });
  const text = await r.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    /* XML or text */
  }
  return { status: r.status, text, json, headers: r.headers };
}

export interface Stack {
  config: Config;
  deps: Deps;
  /** The api app (with its front door). */
  api: string;
  /** The protocols app, reached directly. */
  protocols: string;
  host: PluginHost;
  /** The protocols app itself (to serve it over TLS, or to read its routes). */
  protocolsApp: Express;
  token(opts: Partial<SignOptions> & { uid: string }): Promise<string>;
  /** JSON call to the api app. */
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
  call(method: string, path: string, token: string | null, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

const listenOn = (server: Server, port: number) =>
  new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });

export async function startStack(
  backend: Backend,
  opts: { values?: Partial<Record<SettingName, unknown>>; plugins?: PluginManifest[] } = {},
): Promise<Stack> {
  const db = await backend.open();
  const protocolsPort = await freePort();
  const config = loadConfig({
    env: { NODE_ENV: 'test' },
    values: {
      'auth:secret': TEST_SECRET,
      'auth:options:audience': AUDIENCE,
      'auth:options:issuer': ISSUER,
      'mail:dev_auto_login:enabled': false,
      'datastores:sql:url': db.url,
      'log:level': 'silent',
      'rateLimit:max': 1_000_000,
      'rateLimit:authenticated:max': 1_000_000,
      'mail:jobs:wake_address': '',
      'mail:transport:sendmail:path': '/nonexistent/sendmail',
      'listen:protocols': `127.0.0.1:${protocolsPort}`,
      ...opts.values,
    },
  });
  const registry = productRegistry();
  const store = await openSqlStore({ url: db.url, models: productModels(registry), synchronize: true });
  const deps: Deps = { config, store, events: new LocalEventBus(), log: createLogger({ level: process.env.TEST_LOG ?? 'silent' }) };
  const proto = buildProtocolsApp(deps, { registry, plugins: opts.plugins });
  await proto.host.start();
  const protoServer = createServer(proto.app);
  await listenOn(protoServer, protocolsPort);
  const apiApp = buildApiApp(deps, registry, { plugins: opts.plugins });
  const apiServer = createServer(apiApp.app);
  await listenOn(apiServer, 0);
  const api = `http://127.0.0.1:${(apiServer.address() as { port: number }).port}`;
  const close = (s: Server) =>
    new Promise<void>((r) => {
      s.closeAllConnections();
      s.close(() => r());
    });
  return {
    config,
    deps,
    api,
    protocols: `http://127.0.0.1:${protocolsPort}`,
    host: proto.host,
    protocolsApp: proto.app,
    token: (o) => signToken(config, o),
    async call(method, path, token, body) {
      const r = await request(api + path, {
        method,
        token,
        body: body === undefined ? undefined : JSON.stringify(body),
        headers: body === undefined ? {} : { 'content-type': 'application/json' },
      });
      return { status: r.status, body: r.json ?? r.text };
    },
    async close() {
      await close(apiServer);
      await close(protoServer);
      await proto.host.stop();
      await apiApp.plugins.stop();
      await proto.limits.close();
      await apiApp.limits.close();
      await store.close();
      await db.drop();
    },
  };
}

/** An elevated admin, alice and bob with a mailbox each on example.test. */
export async function seed(stack: Stack) {
  const admin = await stack.token({ uid: 'root', roles: ['admin'], elevated: true });
  const alice = await stack.token({ uid: 'alice' });
  const bob = await stack.token({ uid: 'bob' });
  const d = await stack.call('POST', '/api/mail/domains', admin, { name: 'example.test', verified: true });
  if (d.status !== 201) throw new Error(`seed domain: ${d.status} ${JSON.stringify(d.body)}`);
  const box = async (owner: string) => {
    const r = await stack.call('POST', '/api/mail/mailboxes', admin, { address: `${owner}@example.test`, owners: [owner], name: owner });
    if (r.status !== 201) throw new Error(`seed mailbox: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.uid as string;
  };
  return { admin, alice, bob, aliceBox: await box('alice'), bobBox: await box('bob') };
}

export { freePort };
