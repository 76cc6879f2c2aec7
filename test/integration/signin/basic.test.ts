import { schema } from '../../../lib/config/index.js';
import { randomBytes } from 'node:crypto';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { decodeJwt } from 'jose';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import { authenticate, requireTrusted } from '../../../lib/auth/index.js';
import { basicAuth } from '../../../lib/basic-auth/index.js';
import { errorHandler } from '../../../lib/errors/index.js';
import { trustProxySetting } from '../../../lib/http/index.js';
import '../../../lib/http/types.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';
import { startSigninDouble, type SigninDouble, type SigninDoubleOptions } from '../../helpers/signin-double.js';

// Spec: Authentication / App passwords (Basic), Development; Errors 401 and 429. Real api app over
// real HTTP with real token checks (auto-login off); only the sign-in service is a test double.

const backends = await sqlBackends();
const [sqlite] = backends;
const withRedis = await redisAvailable();

const USERS: SigninDoubleOptions['users'] = {
  alice: { passwords: ['alice-app-pw'] },
  bob: { passwords: ['bob-app-pw'] },
  carol: { passwords: ['carol-app-pw'] },
  root: { passwords: ['root-app-pw'], roles: ['admin'] },
};
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`, 'utf8').toString('base64')}`;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
// The api app hands /mapi and /Vendor-Server-ActiveSync to the protocols daemon (front door), so the
// api app's own wiring is tested on one more Basic path; the default paths in the echo app below.
const P = '/app-pw';

const cleanup: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const c of cleanup.reverse()) await c();
});

/** A sign-in double and an api app asking it, with real auth and the given settings. */
async function start(values: Record<string, unknown> = {}, double: Partial<SigninDoubleOptions> = {}, backend = sqlite) {
  const signin = await startSigninDouble({ users: USERS, ...double });
  cleanup.push(() => signin.close());
  const api = await startTestApi(backend, {
    'mail:auth_server_url': signin.url,
    'mail:basic_auth:realm': 'Test Realm',
    // The default paths (both spellings of the mobile-sync path) and one the api app serves itself.
    'mail:basic_auth:paths': [...(schema['mail:basic_auth:paths'].default as string[]), P],
    ...values,
  } as never);
  cleanup.push(() => api.close());
  // A client reaching the app through the loopback proxy, from the address the test chooses.
  const get = (path: string, authorization?: string, from = '192.0.2.10') =>
    api.call('GET', path, { headers: { 'x-forwarded-for': from, ...(authorization ? { authorization } : {}) } });
  return { api, signin, get };
}

/** The same middleware as the api daemon in a tiny app whose routes show what it made of the caller. */
async function startEcho(api: TestApi) {
  const app = express();
  app.set('trust proxy', trustProxySetting(api.config));
  app.use(basicAuth(api.config, api.deps));
  app.use(authenticate(api.config));
  // Every path answers who the caller is; paths ending in /admin ask for a trusted role first.
  app.use((req, res) => {
    if (req.path.endsWith('/admin')) res.json({ uid: requireTrusted(req.principal, api.config, { fresh: true }).uid });
    else res.json({ path: req.path, principal: req.principal ?? null });
  });
  app.use(errorHandler);
  const server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  cleanup.push(
    () =>
      new Promise((r) => {
        server.closeAllConnections();
        server.close(r);
      }),
  );
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return async (path: string, authorization: string) => {
    const res = await fetch(url + path, { headers: authorization ? { authorization } : {} });
    // eslint-disable-next-line @typescript-eslint/no-explicit-any -- checked field by field
    return { status: res.status, body: (await res.json()) as any };
  };
}

const passwordCalls = (s: SigninDouble) => s.calls.filter((c) => c.path === '/api/auth/password');
// The 404 handler is reached only by a request that got past authentication (no route is there yet).
const passed = { status: 404, body: { code: 'api-107', status: 404, message: expect.any(String) } };

describe('app passwords over Basic', () => {
  it('on the default paths and below, a Basic header is checked by the sign-in service; the caller is signed in', async () => {
    const { api, signin } = await start();
    const echo = await startEcho(api);
    for (const path of [
      '/mapi/emsmdb/',
      '/Vendor-Server-ActiveSync',
      '/Vendor-Server-ActiveSync/x?Cmd=Sync',
      '/Microsoft-Server-ActiveSync?Cmd=Sync',
      '/microsoft-server-activesync', // clients vary the case
    ]) {
      expect(await echo(path, basic('alice', 'alice-app-pw'))).toMatchObject({
        status: 200,
        body: { principal: { uid: 'alice', via: 'basic' } },
      });
    }
    // one call: the later requests were served from the cache
    expect(passwordCalls(signin)).toMatchObject([{ method: 'GET', path: '/api/auth/password', username: 'alice', status: 200 }]);
    expect(await echo('/mapi/x', basic('alice', 'wrong'))).toMatchObject({ status: 401, body: { code: 'api-118' } });
    expect(await echo('/api/whoami', basic('alice', 'alice-app-pw'))).toMatchObject({ status: 401, body: { code: 'api-100' } });
    expect(await echo('/api/whoami', '')).toEqual({ status: 200, body: { path: '/api/whoami', principal: null } });
    expect(signin.passwordCalls).toBe(2);
  });

  it('in the api app, a Basic path passes a right app password on (to the 404 handler) and refuses a wrong one', async () => {
    const { signin, get } = await start();
    expect(await get(`${P}/emsmdb/`, basic('alice', 'alice-app-pw'))).toMatchObject(passed);
    expect(await get(`${P}`, basic('alice', 'wrong'))).toMatchObject({ status: 401, body: { code: 'api-118' } });
    expect(passwordCalls(signin).map((c) => c.status)).toEqual([200, 401]);
  });

  it('the token is verified like any other: a non-elevated principal signed in via basic', async () => {
    const { api, signin } = await start();
    const echo = await startEcho(api);
    const r = await echo('/mapi/whoami', basic('alice', 'alice-app-pw'));
    expect(r).toMatchObject({ status: 200, body: { principal: { uid: 'alice', roles: [], elevatedAt: null, via: 'basic' } } });
    expect(r.body.principal.expiresAt).toBeGreaterThan(Date.now());
    expect(signin.passwordCalls).toBe(1);
  });

  it('an elevated-looking answer of the sign-in service is not trusted as elevated', async () => {
    const { api, signin } = await start({}, { elevated: true });
    // The double really answers an elevated token with the trusted role admin.
    const direct = await fetch(`${signin.url}/api/auth/password`, { headers: { authorization: basic('root', 'root-app-pw') } });
    const claims = decodeJwt(((await direct.json()) as { token: string }).token);
    expect(claims).toMatchObject({ profile: { uid: 'root', roles: ['admin'] }, elevated: expect.any(Number) });
    const echo = await startEcho(api);
    const who = await echo('/mapi/whoami', basic('root', 'root-app-pw'));
    expect(who.body.principal).toMatchObject({ uid: 'root', roles: ['admin'], elevatedAt: null, via: 'basic' });
    // Trusted roles count only with elevation: an app password never administers.
    expect(await echo('/mapi/admin', basic('root', 'root-app-pw'))).toMatchObject({ status: 403, body: { code: 'api-104' } });
    // Control: an elevated admin JWT on the same path is accepted as usual.
    const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    expect(await echo('/mapi/admin', `Bearer ${admin}`)).toEqual({ status: 200, body: { uid: 'root' } });
  });

  it('a valid JWT on a Basic path works as usual and the sign-in service is not asked', async () => {
    const { api, signin, get } = await start();
    const alice = await api.token({ uid: 'alice' });
    expect(await get(`${P}/emsmdb/`, `Bearer ${alice}`)).toMatchObject(passed);
    expect(await get(`${P}/emsmdb/`, 'Bearer not.a.token')).toMatchObject({ status: 403, body: { code: 'api-101' } });
    const echo = await startEcho(api);
    expect((await echo('/mapi/whoami', `Bearer ${alice}`)).body.principal).toMatchObject({ uid: 'alice', via: 'bearer' });
    expect(signin.calls).toEqual([]);
  });

  it('a cache hit avoids a second call; another header is asked about', async () => {
    const { signin, get } = await start();
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'))).toMatchObject(passed);
    expect(await get(`${P}/b`, basic('alice', 'alice-app-pw'))).toMatchObject(passed);
    expect(signin.passwordCalls).toBe(1);
    expect(await get(`${P}/a`, basic('bob', 'bob-app-pw'))).toMatchObject(passed);
    expect(passwordCalls(signin).map((c) => c.username)).toEqual(['alice', 'bob']);
  });

  it('the cache expires after mail:basic_auth:cache_ttl_ms', async () => {
    const { signin, get } = await start({ 'mail:basic_auth:cache_ttl_ms': 300 });
    await get(`${P}/a`, basic('alice', 'alice-app-pw'));
    await get(`${P}/a`, basic('alice', 'alice-app-pw'));
    expect(signin.passwordCalls).toBe(1);
    await sleep(450);
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'))).toMatchObject(passed);
    expect(signin.passwordCalls).toBe(2);
  });

  it('the cache never outlives the token', async () => {
    // Five minutes of cache, but the sign-in service's tokens live two seconds.
    const { signin, get } = await start({ 'mail:basic_auth:cache_ttl_ms': 300_000 }, { ttlSeconds: 2 });
    await get(`${P}/a`, basic('alice', 'alice-app-pw'));
    await get(`${P}/a`, basic('alice', 'alice-app-pw'));
    expect(signin.passwordCalls).toBe(1);
    await sleep(2100); // the first token has expired (exp is whole seconds, at most 2 s away)
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'))).toMatchObject(passed);
    expect(signin.passwordCalls).toBe(2);
  });

  it('a wrong password → 401 api-118 naming the realm; a malformed header is not sent on', async () => {
    const { signin, get } = await start();
    const r = await get(`${P}/a`, basic('alice', 'wrong'));
    expect(r).toMatchObject({ status: 401, body: { code: 'api-118', status: 401, message: expect.any(String) } });
    expect(r.headers.get('www-authenticate')).toBe('Basic realm="Test Realm", charset="UTF-8"');
    expect(passwordCalls(signin)).toMatchObject([{ method: 'GET', path: '/api/auth/password', username: 'alice', status: 401 }]);
    const malformed = await get(`${P}/a`, `Basic ${Buffer.from('no-colon').toString('base64')}`);
    expect(malformed).toMatchObject({ status: 401, body: { code: 'api-118' } });
    expect(malformed.headers.get('www-authenticate')).toContain('realm="Test Realm"');
    expect(signin.passwordCalls).toBe(1);
  });

  it('Basic on any other path is refused, and the sign-in service is not asked', async () => {
    const { signin, get } = await start();
    for (const path of [
      '/api/mail/mailboxes',
      '/api/mail/folders',
      '/.well-known/svc/server-info',
      '/mapix',
      '/api/mapi',
      '/Vendor-Server-ActiveSyncX',
      '/Microsoft-Server-ActiveSync-x',
      `${P}x`,
      `/api${P}`,
    ]) {
      expect([path, await get(path, basic('alice', 'alice-app-pw'))]).toMatchObject([path, { status: 401, body: { code: 'api-100' } }]);
    }
    expect(signin.calls).toEqual([]);
  });

  it('development: Basic is off (refused even on a Basic path)', async () => {
    const { signin, get } = await start({ 'mail:dev_auto_login:enabled': true });
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'))).toMatchObject({ status: 401, body: { code: 'api-100' } });
    expect(signin.calls).toEqual([]);
  });

  describe.each(backends)('address to owner on $name', (backend) => {
    it('a mailbox address is resolved to its owner before the sign-in service is asked', async () => {
      const { api, signin, get } = await start({}, {}, backend);
      const people = await seedUsers(api);
      expect(await get(`${P}/a`, basic('alice@example.test', 'alice-app-pw'))).toMatchObject(passed);
      expect(await get(`${P}/a`, basic('Bob@Example.TEST', 'bob-app-pw'))).toMatchObject(passed);
      expect(passwordCalls(signin).map((c) => c.username)).toEqual(['alice', 'bob']);
      // An alias resolves to the owner of its mailbox too.
      const carol = await api.call('POST', '/api/mail/mailboxes', {
        token: people.admin,
        body: { address: 'carol@example.test', aliases: ['c@example.test'], owners: ['carol'] },
      });
      expect(carol.status).toBe(201);
      expect(await get(`${P}/a`, basic('c@example.test', 'carol-app-pw'))).toMatchObject(passed);
      expect(passwordCalls(signin).at(-1)?.username).toBe('carol');
      // A mailbox of two owners does not say whose password it is: refused without asking.
      const team = await api.call('POST', '/api/mail/mailboxes', {
        token: people.admin,
        body: { address: 'team@example.test', owners: ['alice', 'bob'] },
      });
      expect(team.status).toBe(201);
      expect(await get(`${P}/a`, basic('team@example.test', 'alice-app-pw'))).toMatchObject({ status: 401, body: { code: 'api-118' } });
      expect(signin.passwordCalls).toBe(3);
      // An address nobody has is asked about as given (and fails there).
      expect((await get(`${P}/a`, basic('nobody@example.test', 'x'))).status).toBe(401);
      expect(passwordCalls(signin).at(-1)).toMatchObject({ username: 'nobody@example.test', status: 401 });
    });
  });
});

describe('throttling failed Basic attempts', () => {
  const limits = (pair: number, address: number, user: number) => ({
    trusted_proxies: ['loopback'],
    'mail:basic_auth:throttle:window_ms': 600_000,
    'mail:basic_auth:throttle:per_address_user': pair,
    'mail:basic_auth:throttle:per_address': address,
    'mail:basic_auth:throttle:per_user': user,
  });
  const expect429 = (r: { status: number; body: unknown; headers: Headers }) => {
    expect(r).toMatchObject({ status: 429, body: { code: 'api-109', status: 429, message: expect.any(String) } });
    const after = Number(r.headers.get('retry-after'));
    expect(after).toBeGreaterThan(0);
    expect(after).toBeLessThanOrEqual(600);
  };

  it('per address and username: the pair is blocked, even with the right password; others are not', async () => {
    const { signin, get } = await start(limits(3, 100, 100));
    for (let i = 0; i < 3; i++) expect((await get(`${P}/a`, basic('alice', `wrong-${i}`), '192.0.2.1')).status).toBe(401);
    expect429(await get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1'));
    expect(signin.passwordCalls).toBe(3); // the blocked attempt never reached the sign-in service
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.2')).toMatchObject(passed);
    expect(await get(`${P}/a`, basic('bob', 'bob-app-pw'), '192.0.2.1')).toMatchObject(passed);
  });

  it('a success clears the pair counter', async () => {
    const { get } = await start(limits(3, 100, 100));
    for (let i = 0; i < 2; i++) await get(`${P}/a`, basic('alice', 'wrong'), '192.0.2.1');
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1')).toMatchObject(passed);
    for (let i = 0; i < 2; i++) expect((await get(`${P}/a`, basic('alice', 'wrong2'), '192.0.2.1')).status).toBe(401);
  });

  it('per address: many usernames from one address are blocked; other addresses are not', async () => {
    const { signin, get } = await start(limits(100, 3, 100));
    for (const user of ['alice', 'bob', 'carol']) expect((await get(`${P}/a`, basic(user, 'wrong'), '192.0.2.1')).status).toBe(401);
    expect429(await get(`${P}/a`, basic('root', 'root-app-pw'), '192.0.2.1'));
    expect429(await get(`${P}/a`, 'Basic !!!', '192.0.2.1')); // even a malformed header
    expect(signin.passwordCalls).toBe(3);
    expect(await get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.2')).toMatchObject(passed);
  });

  it('per username: one username from many addresses is blocked; other usernames are not', async () => {
    const { signin, get } = await start(limits(100, 100, 3));
    for (const from of ['192.0.2.1', '192.0.2.2', '2001:db8:1::1'])
      expect((await get(`${P}/a`, basic('alice', 'wrong'), from)).status).toBe(401);
    expect429(await get(`${P}/a`, basic('alice', 'alice-app-pw'), '198.51.100.7'));
    expect429(await get(`${P}/a`, basic('ALICE', 'alice-app-pw'), '198.51.100.8')); // usernames compare case-insensitively
    expect(signin.passwordCalls).toBe(3);
    expect(await get(`${P}/a`, basic('bob', 'bob-app-pw'), '198.51.100.7')).toMatchObject(passed);
  });

  it('without Redis each copy counts for itself', async () => {
    const a = await start(limits(2, 100, 100));
    const b = await start(limits(2, 100, 100));
    for (let i = 0; i < 2; i++) await a.get(`${P}/a`, basic('alice', 'wrong'), '192.0.2.1');
    expect429(await a.get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1'));
    expect(await b.get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1')).toMatchObject(passed);
  });

  it.runIf(withRedis)('with redis:url set, copies share the counters through Redis', async () => {
    const prefix = `svcmail-test-${randomBytes(4).toString('hex')}:`;
    const redis = new Redis(TEST_REDIS_URL);
    cleanup.push(async () => {
      const keys = await redis.keys(`${prefix}*`);
      if (keys.length) await redis.del(...keys);
      await redis.quit();
    });
    const values = { ...limits(2, 100, 100), 'redis:url': TEST_REDIS_URL, 'redis:prefix': prefix };
    const a = await start(values);
    const b = await start(values);
    expect((await a.get(`${P}/a`, basic('alice', 'wrong'), '192.0.2.1')).status).toBe(401);
    expect((await b.get(`${P}/a`, basic('alice', 'wrong'), '192.0.2.1')).status).toBe(401);
    expect429(await a.get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1'));
    expect429(await b.get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.1'));
    // Stored state: the pair, address and user counters, each at 2 with the window as expiry.
    const keys = await redis.keys(`${prefix}fail:basic:*`);
    expect(keys).toHaveLength(3);
    for (const k of keys) {
      expect(await redis.get(k)).toBe('2');
      expect(await redis.pttl(k)).toBeGreaterThan(590_000);
    }
    expect(await b.get(`${P}/a`, basic('alice', 'alice-app-pw'), '192.0.2.2')).toMatchObject(passed);
  });
});
