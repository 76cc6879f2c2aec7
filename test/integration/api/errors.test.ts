import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { AclEntryModel } from '../../../lib/acl/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { signToken } from '../../../lib/auth/index.js';
import { catalogue } from '../../../lib/errors/index.js';
import { LocalEventBus } from '../../../lib/events/index.js';
import { defineResource, ResourceRegistry } from '../../../lib/resources/index.js';
import { type Deps } from '../../../lib/context/index.js';
import { defineModel, type Store } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { buildApiApp } from '../../../daemons/api/app.js';
import { sqlBackends, type TestDatabase } from '../../helpers/databases.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

const GadgetModel = defineModel({ name: 'gadget', table: 'test_gadgets', fields: { label: z.string() } });
const INTERNALS = 'connect to 10.1.2.3 failed at /srv/secret/path.ts:42';

/** A registry with one resource whose create hook fails the way a bug would: a plain Error. */
const gadgets = defineResource({
  group: 'mail',
  name: 'gadgets',
  entity: 'gadget',
  summary: 'test gadgets',
  model: GadgetModel,
  scope: 'global',
  defaultAcl: [{ subject: 'authenticated', rights: ['owner'] }],
  createAcl: [{ subject: 'authenticated', rights: ['create'] }],
  hooks: {
    beforeCreate(_ctx, data) {
      if (data.label === 'boom') throw new Error(INTERNALS);
      if (data.label === 'type') return (null as unknown as { x: Record<string, unknown> }).x;
      return data;
    },
  },
});

interface Custom {
  url: string;
  store: Store;
  logs: string[];
  token: string;
  close(): Promise<void>;
}

/** An api app on a test registry, a fresh database and a logger whose lines the test reads. */
async function customApi(open: () => Promise<TestDatabase>): Promise<Custom> {
  const db = await open();
  const { loadConfig } = await import('../../../lib/config/index.js');
  const config = loadConfig({
    env: { NODE_ENV: 'test' },
    values: { 'auth:secret': 'custom-secret-0123456789', 'mail:dev_auto_login:enabled': false },
  });
  const store = await openSqlStore({ url: db.url, models: [GadgetModel, AclEntryModel, AuditEntryModel], synchronize: true });
  const logs: string[] = [];
  const log = pino(
    { level: 'info' },
    new Writable({
      write(chunk, _enc, cb) {
        logs.push(String(chunk));
        cb();
      },
    }),
  );
  const deps: Deps = { config, store, events: new LocalEventBus(), log };
  const { app } = buildApiApp(deps, new ResourceRegistry().add(gadgets));
  const server: Server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    store,
    logs,
    token: await signToken(config, { uid: 'alice' }),
    async close() {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      await store.close();
      await db.drop();
    },
  };
}

describe.each(backends)('error answers on $name', (backend) => {
  let custom: Custom;
  let api: TestApi;
  let token: string;
  beforeAll(async () => {
    custom = await customApi(backend.open);
    api = await startTestApi(backend, { body_limit_bytes: 2048 });
    token = await api.token({ uid: 'alice' });
  });
  afterAll(async () => {
    await custom?.close();
    await api?.close();
  });

  const post = (label: string) =>
    fetch(`${custom.url}/api/mail/gadgets`, {
      method: 'POST',
      headers: { authorization: `Bearer ${custom.token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ label }),
    });

  it('the test registry works (control case)', async () => {
    const r = await post('fine');
    expect(r.status).toBe(201);
    expect(await custom.store.repo(GadgetModel).count()).toBe(1);
  });

  it.each([
    ['a thrown Error', 'boom'],
    ['a TypeError', 'type'],
  ])('%s becomes a bare 500 api-199 without internals, logged with the request id', async (_what, label) => {
    const r = await post(label);
    const text = await r.text();
    expect(r.status).toBe(500);
    expect(JSON.parse(text)).toEqual({ code: 'api-199', status: 500, message: catalogue['api-199'].message });
    expect(text).not.toMatch(/secret|10\.1\.2\.3|stack|\.ts|null|TypeError/);
    const reqId = r.headers.get('x-request-id')!;
    expect(reqId).toBeTruthy();
    const line = custom.logs
      .map((l) => JSON.parse(l) as { reqId?: string; msg: string; err?: { message: string } })
      .find((l) => l.reqId === reqId && l.msg === 'unhandled error');
    expect(line?.err?.message).toBeTruthy();
    expect(await custom.store.repo(GadgetModel).count({ label })).toBe(0);
  });

  it('/api/status answers 200 while the store answers, 503 api-113 once it is closed', async () => {
    const other = await customApi(backend.open);
    try {
      const ok = await fetch(`${other.url}/api/status`);
      expect(ok.status).toBe(200);
      expect(await ok.json()).toMatchObject({ status: 'ok', datastore: backend.name });
      await other.store.close();
      const down = await fetch(`${other.url}/api/status`);
      expect(down.status).toBe(503);
      expect(await down.json()).toEqual({ code: 'api-113', status: 503, message: expect.any(String) });
    } finally {
      await other.close();
    }
  });

  it.each([
    ['malformed JSON', '{"name": ', 'application/json', 400, 'api-111'],
    ['a JSON string at the top level', '"text"', 'application/json', 400, 'api-111'],
    ['a body over body_limit_bytes', JSON.stringify({ name: 'x'.repeat(3000) }), 'application/json', 413, 'api-110'],
  ])('%s → %i %s', async (_what, body, type, status, code) => {
    const r = await api.call('POST', '/api/mail/folders', { token, body, headers: { 'content-type': type } });
    expect(r.status).toBe(status);
    expect(r.body).toEqual({ code, status, message: expect.any(String) });
  });

  it('the body errors say what is wrong: a bare value points at {value, version}; a body too large names body_limit_bytes', async () => {
    const bare = await api.call('PUT', '/api/mail/folders/x/name', {
      token,
      body: '"Renamed"',
      headers: { 'content-type': 'application/json' },
    });
    expect(bare.body.message).toBe(
      'The body must be a JSON object, not a bare value; to set one property send {"value": <new value>, "version": <the record\'s version>}',
    );
    const bad = await api.call('POST', '/api/mail/folders', { token, body: '{"name": ', headers: { 'content-type': 'application/json' } });
    expect(bad.body.message).toMatch(/^Malformed request body: not valid JSON/);
    const big = await api.call('POST', '/api/mail/folders', {
      token,
      body: JSON.stringify({ name: 'x'.repeat(3000) }),
      headers: { 'content-type': 'application/json' },
    });
    expect(big.body.message).toMatch(
      /^Request too large: the body has \d+ bytes and this route takes at most \d+ \(JSON bodies: body_limit_bytes\)$/,
    );
  });

  it('a body in another content type is not parsed as JSON (400 api-106, not a crash)', async () => {
    const r = await api.call('POST', '/api/mail/folders', { token, body: 'name=x', headers: { 'content-type': 'text/plain' } });
    expect(r).toMatchObject({ status: 400, body: { code: 'api-106', details: [{ path: '(body)' }] } });
  });

  it.each<[string, string, string, unknown]>([
    ['a path parameter that is not UTF-8', 'GET', '/api/mail/folders/%FF', undefined],
    ['a NUL in a path parameter', 'GET', '/api/mail/folders/a%00b', undefined],
    ['a NUL in a filter', 'GET', '/api/mail/domains?name=a%00b', undefined],
    ['a NUL in /api/acls query', 'GET', '/api/acls?resource=folders&uid=%00', undefined],
    ['a NUL in a JSON body string', 'POST', '/api/mail/domains', { name: 'nul.test', dkimSelector: 'a\u0000b' }],
    ['a NUL in a nested JSON body string', 'PUT', '/api/mail/domains', [{ uid: 'x', version: 1, aliases: ['a\u0000.test'] }]],
    ['a NUL in a JSON key', 'POST', '/api/mail/domains', { 'name\u0000': 'nul.test' }],
  ])('%s is 400 api-106, never a 500', async (_what, method, path, body) => {
    const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    const r = await api.call(method, path, { token: admin, body });
    expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
  });

  it('text with ordinary control-free unicode still works (control case)', async () => {
    const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    const r = await api.call('GET', `/api/mail/domains?name=${encodeURIComponent('bücher.test')}`, { token: admin });
    expect(r).toMatchObject({ status: 200, body: [] });
  });

  it.each([
    ['GET', '/api/nowhere'],
    ['GET', '/api/v1/mail/mailboxes'],
    ['POST', '/api/mail/unknown-things'],
    ['GET', '/not-api'],
  ])('an unknown route %s %s → 404 api-107', async (method, path) => {
    const r = await api.call(method, path, { token });
    expect(r).toMatchObject({ status: 404, body: { code: 'api-107', status: 404 } });
  });

  it('every error answer carries the security headers and a request id', async () => {
    const r = await api.call('GET', '/api/nowhere');
    expect(r.headers.get('x-content-type-options')).toBe('nosniff');
    expect(r.headers.get('cache-control')).toBe('no-store');
    expect(r.headers.get('x-request-id')).toMatch(/^[\w-]+$/);
    expect(r.headers.get('x-powered-by')).toBeNull();
  });
});
