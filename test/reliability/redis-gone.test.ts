// Reliability, fault injection: Redis gone. With redis:url at a closed port, and with a real Redis made
// unreachable (black hole, then refused) under the running api daemon: the api still answers, rate
// limits fail open (documented on redis:url), Basic app-password checks fail closed (503 api-113),
// publishing events never crashes the daemon, and nothing ends in an unhandled rejection.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../lib/auth/index.js';
import { loadConfig, type SettingName } from '../../lib/config/index.js';
import { createEventBus } from '../../lib/events/index.js';
import { createLogger } from '../../lib/log/index.js';
import { startApi } from '../../daemons/api/main.js';
import { AUDIENCE, ISSUER, seedUsers, TEST_SECRET, type TestApi } from '../helpers/api.js';
import { sqlBackends } from '../helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../helpers/redis.js';
import { freePort } from '../helpers/scanners.js';
import { startSigninDouble, type SigninDouble } from '../helpers/signin-double.js';
import { problemsOf } from './faults.js';
import { tcpProxy } from './peers.js';
import { INGEST_SECRET, startWorld } from './world.js';

const backends = await sqlBackends();
const withRedis = await redisAvailable();
const APP_PW = 'alice-app-password-9d2e';
const BASIC_PATH = '/api/mail/folders';
const COMMAND_TIMEOUT = 300;
/** An answer while Redis is gone may wait for the counters' command to fail, not much longer. */
const BOUND_MS = 5000;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

const rejections: unknown[] = [];
const onRejection = (reason: unknown) => void rejections.push(reason);
beforeAll(() => void process.on('unhandledRejection', onRejection));
afterAll(() => void process.off('unhandledRejection', onRejection));

const counts = { faults: 0, routes: 0, leaks: 0 };
let signin: SigninDouble;
beforeAll(async () => {
  signin = await startSigninDouble({ users: { alice: { passwords: [APP_PW] } } });
});
afterAll(async () => signin?.close());

async function timed(url: string, init: RequestInit = {}) {
  const t0 = Date.now();
  const res = await fetch(url, { ...init, signal: AbortSignal.timeout(30_000) });
  return { status: res.status, text: await res.text(), headers: res.headers, ms: Date.now() - t0 };
}
const basic = { authorization: `Basic ${Buffer.from(`alice@example.test:${APP_PW}`).toString('base64')}` };

/** The checks of one outage: the api answers, limits fail open, Basic fails closed, events publish. */
async function duringOutage(base: string, t: { alice: string; mailbox: string; inbox: string }, what: string) {
  const calls = signin.passwordCalls;
  // Over rateLimit:max (2 or 3) on purpose: with the counters gone, every request passes.
  for (let i = 0; i < 5; i++) {
    const a = await timed(`${base}/.well-known/svc/server-info`);
    expect(a.status, `${what}: anonymous ${i}`).toBe(200);
    expect(a.ms).toBeLessThan(BOUND_MS);
  }
  const read = await timed(`${base}/api/mail/folders/${t.inbox}`, { headers: { authorization: `Bearer ${t.alice}` } });
  expect(read.status, what).toBe(200);
  // A write publishes an event (Redis pub/sub in the daemon): answered, daemon alive.
  const created = await timed(`${base}/api/mail/folders`, {
    method: 'POST',
    headers: { authorization: `Bearer ${t.alice}`, 'content-type': 'application/json' },
    body: JSON.stringify({ mailboxUid: t.mailbox, name: `during ${what} ${randomBytes(3).toString('hex')}` }),
  });
  expect(created.status, `${what}: ${created.text}`).toBe(201);
  expect(created.ms).toBeLessThan(BOUND_MS);
  // Basic throttling cannot be checked without its counters: fail closed, the password never asked.
  const b = await timed(`${base}${BASIC_PATH}?mailboxUid=${t.mailbox}`, { headers: basic });
  expect(b.status, `${what}: ${b.text}`).toBe(503);
  expect(JSON.parse(b.text)).toMatchObject({ code: 'api-113' });
  const found = problemsOf(b, { expectError: true, extra: [APP_PW] });
  counts.leaks += found.filter((p) => p.startsWith('leak')).length;
  expect(found).toEqual([]);
  expect(signin.passwordCalls).toBe(calls);
  counts.faults += 8;
  counts.routes = 4;
}

describe.each(backends)('Redis gone ($name)', (backend) => {
  it('redis:url at a closed port: the api answers, rate limits fail open, Basic fails closed', async () => {
    const port = await freePort();
    const w = await startWorld(backend, {
      'redis:url': `redis://127.0.0.1:${port}`,
      'redis:prefix': `rel-${randomBytes(4).toString('hex')}:`,
      'redis:command_timeout_ms': COMMAND_TIMEOUT,
      'rateLimit:max': 2,
      'mail:auth_server_url': signin.url,
      'mail:basic_auth:paths': ['/mapi', BASIC_PATH],
    } as Partial<Record<SettingName, unknown>>);
    try {
      await duringOutage(w.api.url, { alice: w.tokens.alice, mailbox: w.ids.mailbox, inbox: w.ids.inbox }, 'closed port');
      await sleep(COMMAND_TIMEOUT * 3); // the rate-limit store's script loads have failed by now
      expect(rejections.map(String)).toEqual([]);
    } finally {
      await w.close();
    }
  }, 120_000);

  it.runIf(withRedis)(
    'a real Redis made unreachable under the running api daemon (black hole, then refused)',
    async () => {
      const target = new URL(TEST_REDIS_URL);
      const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
      const prefix = `rel-${randomBytes(4).toString('hex')}:`;
      const db = await backend.open();
      const dataDir = mkdtempSync(join(tmpdir(), 'svcmail-redis-gone-'));
      const config = loadConfig({
        env: { NODE_ENV: 'test' },
        values: {
          'auth:secret': TEST_SECRET,
          'auth:options:audience': AUDIENCE,
          'auth:options:issuer': ISSUER,
          'mail:dev_auto_login:enabled': false,
          'datastores:sql:url': db.url,
          data_dir: dataDir,
          'listen:api': '127.0.0.1:0',
          'log:level': 'silent',
          'redis:url': `redis://127.0.0.1:${proxy.port}`,
          'redis:prefix': prefix,
          'redis:command_timeout_ms': COMMAND_TIMEOUT,
          'rateLimit:max': 3,
          'rateLimit:authenticated:max': 1_000_000,
          'mail:transport:ingest:secret': INGEST_SECRET,
          'mail:jobs:wake_address': '',
          'mail:auth_server_url': signin.url,
          'mail:basic_auth:paths': ['/mapi', BASIC_PATH],
        } as Partial<Record<SettingName, unknown>>,
      });
      const daemon = await startApi(config);
      const base = `http://${daemon.address}`;
      const watch = new Redis(TEST_REDIS_URL);
      try {
        const api = {
          url: base,
          token: (o: Parameters<TestApi['token']>[0]) => signToken(config, o),
          async call(method: string, path: string, opts: { token?: string | null; body?: unknown } = {}) {
            const res = await fetch(base + path, {
              method,
              headers: { ...(opts.token ? { authorization: `Bearer ${opts.token}` } : {}), 'content-type': 'application/json' },
              body: opts.body === undefined ? undefined : JSON.stringify(opts.body),
            });
            const text = await res.text();
            return { status: res.status, body: text ? JSON.parse(text) : null, headers: res.headers };
          },
        } as unknown as TestApi;
        const p = await seedUsers(api);
        const inbox = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body.find(
          (f: { role: string }) => f.role === 'inbox',
        ).uid as string;
        const t = { alice: p.alice, mailbox: p.aliceBox.uid, inbox };

        // Healthy: the limits count in Redis (the 4th anonymous request is refused) and events go through it.
        const seen: string[] = [];
        watch.on('pmessage', (_p: string, channel: string) => void seen.push(channel));
        await watch.psubscribe(`${prefix}ch:*`);
        for (let i = 0; i < 3; i++) expect((await timed(`${base}/.well-known/svc/server-info`)).status).toBe(200);
        expect((await timed(`${base}/.well-known/svc/server-info`)).status).toBe(429);
        const created = await api.call('POST', '/api/mail/folders', {
          token: p.alice,
          body: { mailboxUid: p.aliceBox.uid, name: 'healthy' },
        });
        expect(created.status).toBe(201);
        for (let i = 0; i < 40 && !seen.length; i++) await sleep(50);
        expect(seen.length).toBeGreaterThan(0);

        proxy.blackhole();
        await duringOutage(base, t, 'black hole');
        await proxy.close();
        await duringOutage(base, t, 'refused');
        const status = await timed(`${base}/api/status`);
        expect(status.status).toBe(200);
        await sleep(COMMAND_TIMEOUT * 3);
        expect(rejections.map(String)).toEqual([]);
      } finally {
        watch.disconnect();
        // The daemon stops in bounded time although Redis is gone.
        const stopped = await Promise.race([daemon.close().then(() => true), sleep(15_000).then(() => false)]);
        await proxy.close().catch(() => undefined);
        await db.drop();
        rmSync(dataDir, { recursive: true, force: true });
        expect(stopped).toBe(true);
      }
    },
    120_000,
  );
});

describe('the shared event channel without Redis', () => {
  it('createEventBus with Redis unreachable refuses to start (the daemon exits; no lingering retries, no unhandled rejection)', async () => {
    const port = await freePort();
    const config = loadConfig({
      env: { NODE_ENV: 'test' },
      values: { 'auth:secret': TEST_SECRET, 'redis:url': `redis://127.0.0.1:${port}`, 'log:level': 'silent' },
    });
    const lines: string[] = [];
    const log = createLogger({ level: 'warn', destination: { write: (l: string) => void lines.push(l) } });
    const t0 = Date.now();
    await expect(createEventBus(config, log)).rejects.toThrow();
    expect(Date.now() - t0).toBeLessThan(BOUND_MS);
    const after = lines.length;
    await sleep(1500);
    expect(lines.slice(after)).toEqual([]); // no client left reconnecting (each attempt would log)
    expect(rejections.map(String)).toEqual([]);
  });

  it.runIf(withRedis)(
    'a bus whose Redis goes away keeps publishing locally and never throws',
    async () => {
      const target = new URL(TEST_REDIS_URL);
      const proxy = await tcpProxy({ host: target.hostname, port: Number(target.port || 6379) });
      const config = loadConfig({
        env: { NODE_ENV: 'test' },
        values: {
          'auth:secret': TEST_SECRET,
          'redis:url': `redis://127.0.0.1:${proxy.port}`,
          'redis:prefix': `rel-${randomBytes(4).toString('hex')}:`,
          'log:level': 'silent',
        },
      });
      const bus = await createEventBus(config);
      const got: unknown[] = [];
      const off = bus.subscribe('folder-1', (ev) => void got.push(ev));
      await proxy.close();
      for (let i = 0; i < 200; i++) {
        bus.publish(['folder-1'], { type: 'folder', action: 'update', data: { uid: 'folder-1', i } });
        bus.emitMail('message.delivered', { i });
      }
      counts.faults += 400;
      expect(got).toHaveLength(200);
      off();
      const closed = await Promise.race([bus.close().then(() => true), sleep(10_000).then(() => false)]);
      expect(closed).toBe(true);
      await sleep(300);
      expect(rejections.map(String)).toEqual([]);
      // eslint-disable-next-line no-console -- the figures of the run, for the report
      console.log(
        `reliability: Redis gone: faults tried ${counts.faults}, routes checked ${counts.routes}, leaks ${counts.leaks}, unhandled rejections ${rejections.length}`,
      );
    },
    30_000,
  );
});
