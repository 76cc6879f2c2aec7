import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../../lib/auth/index.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { loadConfig, runningFromSources } from '../../../lib/config/index.js';
import { LocalEventBus } from '../../../lib/events/index.js';
import { createLogger } from '../../../lib/log/index.js';
import { DomainModel } from '../../../lib/settings/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { buildApiApp } from '../../../daemons/api/app.js';
import { freshSqlite } from '../../helpers/databases.js';

const SECRET = 'dev-login-secret-0123456789';

/** An api app under a chosen NODE_ENV and auto-login setting (the test helper always uses NODE_ENV=test). */
async function appWith(nodeEnv: string, enabled: boolean) {
  const db = freshSqlite();
  // Outside development every secret must be set for real (the ingest hand-off refuses its default).
  const production: Record<string, unknown> = { 'mail:transport:ingest:secret': 'ingest-secret-0123456789' };
  const config = loadConfig({
    env: { NODE_ENV: nodeEnv },
    values: { ...production, 'auth:secret': SECRET, 'mail:dev_auto_login:enabled': enabled, 'log:level': 'silent' },
  });
  const registry = productRegistry();
  const store = await openSqlStore({ url: db.url, models: productModels(registry), synchronize: true });
  const { app } = buildApiApp({ config, store, events: new LocalEventBus(), log: createLogger({ level: 'silent' }) }, registry);
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return {
    url,
    store,
    config,
    call: async (method: string, path: string, headers: Record<string, string> = {}, body?: unknown) => {
      const res = await fetch(url + path, {
        method,
        headers: { ...headers, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await store.close();
      await db.drop();
    },
  };
}

it('tests run from the TypeScript sources', () => {
  expect(runningFromSources).toBe(true);
});

describe.each(['development', 'dev', 'test'])('development auto-login with NODE_ENV=%s', (nodeEnv) => {
  let a: Awaited<ReturnType<typeof appWith>>;
  beforeAll(async () => {
    a = await appWith(nodeEnv, true);
  });
  afterAll(async () => a?.close());

  it('a request without a token is the elevated development administrator', async () => {
    const r = await a.call('POST', '/api/mail/domains', {}, { name: 'dev.test', verified: true });
    expect(r.status).toBe(201);
    expect(await a.store.repo(DomainModel).findOne({ name: 'dev.test' })).not.toBeNull();
    const audit = await a.call('GET', '/api/mail/audit-log?action=domains.create');
    expect(audit.status).toBe(200);
    expect(audit.body[0]).toMatchObject({ actor: 'dev-admin', actorVia: 'dev' });
    // sensitive administration with fresh elevation works too
    expect((await a.call('GET', '/api/mail/mailboxes?scope=admin')).status).toBe(200);
    expect((await a.call('GET', '/api/openapi/json')).status).toBe(200);
  });

  it('the development administrator still cannot see a user mailbox (404)', async () => {
    const box = await a.call('POST', '/api/mail/mailboxes', {}, { address: 'alice@dev.test', owners: ['alice'] });
    expect(box.status).toBe(201);
    expect((await a.call('GET', `/api/mail/mailboxes/${box.body.uid}`)).status).toBe(404);
    const alice = await signToken(a.config, { uid: 'alice' });
    expect((await a.call('GET', `/api/mail/mailboxes/${box.body.uid}`, { authorization: `Bearer ${alice}` })).status).toBe(200);
  });

  it.each([
    ['an invalid bearer token', { authorization: 'Bearer forged' }, 403],
    ['an invalid jwt cookie', { cookie: 'jwt=forged' }, 403],
    ['a Basic header (Basic auth is off)', { authorization: 'Basic YTpi' }, 401],
  ])('%s is not replaced by the auto-login (%i)', async (_what, headers, status) => {
    const r = await a.call('POST', '/api/mail/domains', headers, { name: `x${status}.test` });
    expect(r.status).toBe(status);
    expect(await a.store.repo(DomainModel).findOne({ name: `x${status}.test` })).toBeNull();
  });
});

describe.each<[string, string, boolean]>([
  ['enabled false', 'development', false],
  ['NODE_ENV production', 'production', true],
  ['NODE_ENV staging', 'staging', true],
])('no auto-login with %s', (_what, nodeEnv, enabled) => {
  let a: Awaited<ReturnType<typeof appWith>>;
  beforeAll(async () => {
    a = await appWith(nodeEnv, enabled);
  });
  afterAll(async () => a?.close());

  it.each([
    ['GET', '/api/mail/domains'],
    ['POST', '/api/mail/domains'],
    ['GET', '/api/openapi/json'],
  ])('%s %s without a token → 401 api-100', async (method, path) => {
    const r = await a.call(method, path, {}, method === 'POST' ? { name: 'nope.test' } : undefined);
    expect(r).toMatchObject({ status: 401, body: { code: 'api-100' } });
    expect(await a.store.repo(DomainModel).count()).toBe(0);
  });
});
