// docs/SECURITY.md, WebSocket (/push) floods (Spec: Limits — rate limiting; Events — Push
// WebSocket): /push upgrades count toward the anonymous rate limit per client address (IPv6 per
// /64), refused ones included, and sockets waiting for their LOGIN frame are capped per address and
// in total. The client address is believed from X-Forwarded-For only through trusted hops: the push
// daemon believes loopback (the api front door, a local nginx), and the front door replaces what
// the client sent with the address it decided through trusted_proxies. Real api and push daemons,
// real ws clients.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';
import { Client, freePort, ORIGIN, spawnDaemon, startStack, type Daemon, type Stack } from './_stack.js';

const MAX = 6; // rateLimit:max
const PER_ADDRESS = 3; // mail:push:max_unauthenticated_per_address
const TOTAL = 5; // mail:push:max_unauthenticated
const LOGIN_TIMEOUT_S = 20;
const VALUES = {
  'rateLimit:max': MAX,
  'rateLimit:window_ms': 60_000,
  'mail:push:max_unauthenticated_per_address': PER_ADDRESS,
  'mail:push:max_unauthenticated': TOTAL,
  'mail:push:login_timeout_ms': LOGIN_TIMEOUT_S * 1000,
};

interface Answer {
  status: number;
  retryAfter?: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- error bodies are checked field by field
  body: any;
  ws?: WebSocket;
}

interface UpgradeOpts {
  token?: string;
  cookie?: string;
  origin?: string | null;
  xff?: string;
  path?: string;
}

/** One real ws upgrade: 101 with the open socket, or the refusal's status, Retry-After and body. */
function upgrade(base: string, o: UpgradeOpts = {}): Promise<Answer> {
  const headers: Record<string, string> = {};
  if (o.token) headers.authorization = `Bearer ${o.token}`;
  if (o.cookie) headers.cookie = `jwt=${o.cookie}`;
  if (o.xff) headers['x-forwarded-for'] = o.xff;
  const origin = o.origin === undefined ? ORIGIN : o.origin;
  const ws = new WebSocket(`${base.replace(/^http/, 'ws')}${o.path ?? '/push'}`, { headers, ...(origin ? { origin } : {}) });
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ status: 101, body: null, ws }));
    ws.once('unexpected-response', (req, res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        text += d;
      });
      res.on('end', () => {
        req.destroy();
        const ra = res.headers['retry-after'];
        resolve({ status: res.statusCode ?? 0, retryAfter: Array.isArray(ra) ? ra[0] : ra, body: text ? JSON.parse(text) : null });
      });
    });
    ws.once('error', reject);
  });
}

const held: WebSocket[] = [];
/** An upgrade whose socket stays open until the test lets it go. */
async function hold(base: string, o: UpgradeOpts = {}): Promise<Answer> {
  const a = await upgrade(base, o);
  if (a.ws) held.push(a.ws);
  return a;
}

async function statusOf(d: Daemon): Promise<{ connections: number; unauthenticated: number }> {
  return (await fetch(`${d.url}/push/status`)).json() as Promise<{ connections: number; unauthenticated: number }>;
}

/** Closes every held socket and waits until the push daemon has let go of them. */
async function release(d: Daemon): Promise<void> {
  for (const ws of held.splice(0)) ws.terminate();
  const until = Date.now() + 10_000;
  while ((await statusOf(d)).connections !== 0) {
    if (Date.now() > until) throw new Error(`push daemon still holds sockets: ${JSON.stringify(await statusOf(d))}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const expectTooMany = (a: Answer) => {
  expect(a.status, JSON.stringify(a.body)).toBe(429);
  expect(a.body).toMatchObject({ code: 'api-109', status: 429 });
  expect(Number(a.retryAfter)).toBeGreaterThan(0);
  expect(Number(a.retryAfter)).toBeLessThanOrEqual(60);
};

let stack: Stack;
let push: Daemon;
let alice: string;
let foreign: string;

beforeAll(async () => {
  stack = await startStack({ copies: 1, values: VALUES });
  push = stack.push[0];
  alice = await stack.token({ uid: 'alice' });
  foreign = await stack.token({ uid: 'alice', secret: 'another-secret-0123456789abcdef' });
}, 60_000);
afterAll(async () => {
  for (const ws of held.splice(0)) ws.terminate();
  await stack?.close();
});

describe('/push upgrades count toward the anonymous rate limit', () => {
  it('a burst of refused upgrades from one address meets 429 api-109 with Retry-After after rateLimit:max', async () => {
    const from = '198.51.100.1';
    // Every kind of refusal counts: a bad token (Bearer and cookie), a foreign Origin, a token in the query, a wrong path.
    expect((await upgrade(push.url, { xff: from, token: foreign })).status).toBe(403);
    expect((await upgrade(push.url, { xff: from, cookie: foreign })).status).toBe(403);
    expect((await upgrade(push.url, { xff: from, token: alice, origin: 'https://evil.test' })).status).toBe(403);
    expect((await upgrade(push.url, { xff: from, path: `/push?access_token=${alice}` })).status).toBe(401);
    expect((await upgrade(push.url, { xff: from, path: '/pushx' })).status).toBe(404);
    expect((await upgrade(push.url, { xff: from, token: foreign })).status).toBe(403);
    // rateLimit:max reached: the 429 replaces the upgrade's own answer.
    for (let i = 0; i < 3; i++) expectTooMany(await upgrade(push.url, { xff: from, token: foreign }));
    // An upgrade without a token is an anonymous caller of the same address: refused too.
    expectTooMany(await upgrade(push.url, { xff: from }));
    // A valid token counts per user (rateLimit:authenticated), as on the API; another address is not limited.
    const ok = await upgrade(push.url, { xff: from, token: alice });
    expect(ok.status).toBe(101);
    ok.ws!.terminate();
    expect((await upgrade(push.url, { xff: '198.51.100.2', token: foreign })).status).toBe(403);
  });

  it('counts IPv6 addresses per /64', async () => {
    for (let i = 1; i <= MAX; i++) expect((await upgrade(push.url, { xff: `2001:db8:a:d::${i}`, token: foreign })).status).toBe(403);
    expectTooMany(await upgrade(push.url, { xff: '2001:db8:a:d:ffff:ffff:ffff:ffff', token: foreign }));
    expect((await upgrade(push.url, { xff: '2001:db8:a:e::1', token: foreign })).status).toBe(403);
  });
});

describe('/push sockets waiting for LOGIN are capped', () => {
  it('per address: below mail:push:max_unauthenticated_per_address they open, beyond it 429; a LOGIN frees a place', async () => {
    const from = '198.51.100.10';
    for (let i = 0; i < PER_ADDRESS; i++) expect((await hold(push.url, { xff: from })).status).toBe(101);
    const over = await upgrade(push.url, { xff: from });
    expectTooMany(over);
    expect(over.retryAfter).toBe(String(LOGIN_TIMEOUT_S));
    expect(over.body.message).toMatch(/waiting for LOGIN/);
    expect((await statusOf(push)).unauthenticated).toBe(PER_ADDRESS);
    // Another address, and a socket signed in at the upgrade, are not held back.
    expect((await hold(push.url, { xff: '198.51.100.11' })).status).toBe(101);
    expect((await hold(push.url, { xff: from, token: alice })).status).toBe(101);
    // One of the waiting sockets signs in: its place is free again.
    const c = new Client(held[0]);
    c.send({ id: 1, type: 'LOGIN', data: alice });
    expect(await c.next((f) => f.id === 1)).toMatchObject({ type: 'LOGGED_IN' });
    expect((await hold(push.url, { xff: from })).status).toBe(101);
    await release(push);
  });

  it('in total: beyond mail:push:max_unauthenticated the answer is 503 api-113 with Retry-After; closing one frees a place', async () => {
    for (let i = 0; i < PER_ADDRESS; i++) expect((await hold(push.url, { xff: '198.51.100.20' })).status).toBe(101);
    for (let i = PER_ADDRESS; i < TOTAL; i++) expect((await hold(push.url, { xff: '198.51.100.21' })).status).toBe(101);
    const full = await upgrade(push.url, { xff: '198.51.100.22' });
    expect(full.status).toBe(503);
    expect(full.body).toMatchObject({ code: 'api-113', status: 503 });
    expect(full.retryAfter).toBe(String(LOGIN_TIMEOUT_S));
    // A socket signed in at the upgrade does not wait for LOGIN: not limited by the cap.
    expect((await hold(push.url, { xff: '198.51.100.22', cookie: alice })).status).toBe(101);
    held.shift()!.terminate();
    const until = Date.now() + 10_000;
    while ((await statusOf(push)).unauthenticated !== TOTAL - 1 && Date.now() < until) await new Promise((r) => setTimeout(r, 50));
    expect((await hold(push.url, { xff: '198.51.100.22' })).status).toBe(101);
    await release(push);
  });

  it('per /64 for IPv6 addresses', async () => {
    for (const a of ['2001:db8:a:b::1', '2001:db8:a:b::2', '2001:db8:a:b:ffff:ffff:ffff:ffff'])
      expect((await hold(push.url, { xff: a })).status).toBe(101);
    expectTooMany(await upgrade(push.url, { xff: '2001:db8:a:b::9' }));
    expect((await hold(push.url, { xff: '2001:db8:a:c::1' })).status).toBe(101);
    await release(push);
  });
});

describe("through the api daemon's front door", () => {
  it('the limit applies, and an X-Forwarded-For from a peer outside trusted_proxies is ignored (the front door replaces it)', async () => {
    // trusted_proxies is empty: every upgrade below comes from 127.0.0.1, whatever it claims.
    for (let i = 1; i <= MAX; i++) expect((await upgrade(stack.api.url, { xff: `203.0.113.${i}`, token: foreign })).status).toBe(403);
    expectTooMany(await upgrade(stack.api.url, { xff: '203.0.113.77', token: foreign }));
    expectTooMany(await upgrade(stack.api.url, { xff: '203.0.113.78' }));
    // A valid token goes on and is counted per user.
    const ok = await upgrade(stack.api.url, { xff: '203.0.113.79', token: alice });
    expect(ok.status).toBe(101);
    ok.ws!.terminate();
    // The addresses the client named were never counted at the push daemon.
    expect((await upgrade(push.url, { xff: '203.0.113.1', token: foreign })).status).toBe(403);
  });

  describe('with trusted_proxies naming the peer', () => {
    let pushX: Daemon;
    let apiX: Daemon;
    beforeAll(async () => {
      const [pushPort, apiPort] = [await freePort(), await freePort()];
      pushX = await spawnDaemon('push', stack.configFile, [`listen:push=127.0.0.1:${pushPort}`], '/push/status', pushPort);
      apiX = await spawnDaemon(
        'api',
        stack.configFile,
        [`listen:api=127.0.0.1:${apiPort}`, `listen:push=127.0.0.1:${pushPort}`, 'trusted_proxies=["loopback"]'],
        '/api/status',
        apiPort,
      );
    }, 60_000);
    afterAll(async () => {
      await apiX?.stop();
      await pushX?.stop();
    });

    it("passes the address it decided; after the push daemon's 429 it answers that address itself, tokens still go on", async () => {
      for (let i = 0; i < PER_ADDRESS; i++) expect((await hold(apiX.url, { xff: `192.0.2.200, 192.0.2.50` })).status).toBe(101);
      expectTooMany(await upgrade(apiX.url, { xff: '192.0.2.50' }));
      // The believed address is the last untrusted hop: another one is counted on its own.
      expect((await hold(apiX.url, { xff: '192.0.2.50, 192.0.2.51' })).status).toBe(101);
      expect((await statusOf(pushX)).unauthenticated).toBe(PER_ADDRESS + 1);
      // With the push daemon gone, the front door still refuses the refused address (it does not
      // reach the push daemon), while other addresses and upgrades with a token are carried there (502).
      await pushX.stop();
      held.splice(0);
      const again = await upgrade(apiX.url, { xff: '192.0.2.50' });
      expectTooMany(again);
      expect(Number(again.retryAfter)).toBeLessThanOrEqual(LOGIN_TIMEOUT_S);
      expect((await upgrade(apiX.url, { xff: '192.0.2.52' })).status).toBe(502);
      expect((await upgrade(apiX.url, { xff: '192.0.2.50', token: alice })).status).toBe(502);
    });
  });
});

const withRedis = await redisAvailable();
describe.skipIf(!withRedis)('with redis:url, copies share the counts (and with the api daemon)', () => {
  let shared: Stack;
  beforeAll(async () => {
    shared = await startStack({ copies: 2, redisUrl: TEST_REDIS_URL, values: { ...VALUES, trusted_proxies: ['loopback'] } });
  }, 60_000);
  afterAll(async () => shared?.close());

  it('refused upgrades on either copy and anonymous API requests of one address count together', async () => {
    const bad = await shared.token({ uid: 'alice', secret: 'another-secret-0123456789abcdef' });
    const from = '198.51.100.100'; // the stack's redis:prefix is its own
    const api = await fetch(`${shared.api.url}/.well-known/svc/server-info`, { headers: { 'x-forwarded-for': from } });
    expect(api.status).toBe(200);
    for (let i = 1; i < MAX; i++) expect((await upgrade(shared.push[i % 2].url, { xff: from, token: bad })).status).toBe(403);
    expectTooMany(await upgrade(shared.push[0].url, { xff: from, token: bad }));
    expectTooMany(await upgrade(shared.push[1].url, { xff: from, token: bad }));
    expect((await fetch(`${shared.api.url}/.well-known/svc/server-info`, { headers: { 'x-forwarded-for': from } })).status).toBe(429);
  });
});
