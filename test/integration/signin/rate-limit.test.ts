import { randomBytes } from 'node:crypto';
import { afterAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';

const [sqlite] = await sqlBackends();
const withRedis = await redisAvailable();

const open: TestApi[] = [];
const start = async (values: Record<string, unknown>) => {
  const api = await startTestApi(sqlite, { 'mail:auth_server_url': 'https://auth.mail.test', ...values } as never);
  open.push(api);
  return api;
};
afterAll(async () => {
  for (const a of open) await a.close();
});

const hit = (api: TestApi, headers: Record<string, string> = {}, token: string | null = null) =>
  api.call('GET', '/.well-known/svc/server-info', { headers, token });

describe('rate limits', () => {
  it('serves server-info publicly, and limits anonymous callers with 429 api-109 and Retry-After', async () => {
    const api = await start({ 'rateLimit:max': 3 });
    const first = await hit(api);
    expect(first.status).toBe(200);
    expect(first.body).toEqual({ authServerUrl: 'https://auth.mail.test' });
    await hit(api);
    await hit(api);
    const over = await hit(api);
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ code: 'api-109', status: 429 });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
  });

  it('counts IPv6 clients per /64 through a trusted proxy', async () => {
    const api = await start({ 'rateLimit:max': 2, trusted_proxies: ['loopback'] });
    const from = (ip: string) => hit(api, { 'x-forwarded-for': ip });
    expect((await from('2001:db8:1:1::1')).status).toBe(200);
    expect((await from('2001:db8:1:1::2')).status).toBe(200);
    expect((await from('2001:db8:1:1:ffff::9')).status).toBe(429); // same /64: the bucket is full
    expect((await from('2001:db8:1:2::1')).status).toBe(200); // another /64
    expect((await from('192.0.2.7')).status).toBe(200);
  });

  it('ignores X-Forwarded-For from a peer that is not a trusted proxy', async () => {
    const api = await start({ 'rateLimit:max': 2 });
    expect((await hit(api, { 'x-forwarded-for': '198.51.100.1' })).status).toBe(200);
    expect((await hit(api, { 'x-forwarded-for': '198.51.100.2' })).status).toBe(200);
    expect((await hit(api, { 'x-forwarded-for': '198.51.100.3' })).status).toBe(429); // all counted as 127.0.0.1
  });

  it('limits signed-in callers per user, separately from each other and from anonymous callers', async () => {
    const api = await start({ 'rateLimit:max': 1, 'rateLimit:authenticated:max': 3 });
    const alice = await api.token({ uid: 'alice' });
    const bob = await api.token({ uid: 'bob' });
    for (let i = 0; i < 3; i++) expect((await hit(api, {}, alice)).status).toBe(200);
    expect((await hit(api, {}, alice)).status).toBe(429);
    expect((await hit(api, {}, bob)).status).toBe(200);
    expect((await hit(api)).status).toBe(200);
  });

  it('counts callers whose token fails by address, so a flood of bad or expired tokens reaches 429', async () => {
    const api = await start({ 'rateLimit:max': 3, trusted_proxies: ['loopback'] });
    const expired = await api.token({ uid: 'alice', ttlSeconds: -30 });
    const from = (ip: string, authorization?: string) =>
      api.call('GET', '/api/mail/mailboxes', { headers: { 'x-forwarded-for': ip, ...(authorization ? { authorization } : {}) } });
    // Each failure is counted once: exactly rateLimit:max of them are answered as themselves.
    expect((await from('192.0.2.1', 'Bearer not.a.token')).body).toMatchObject({ code: 'api-101' });
    expect((await from('192.0.2.1', `Bearer ${expired}`)).body).toMatchObject({ code: 'api-100' });
    expect((await from('192.0.2.1', 'Bearer not.a.token')).body).toMatchObject({ code: 'api-101' });
    const over = await from('192.0.2.1', `Bearer ${expired}`);
    expect(over).toMatchObject({ status: 429, body: { code: 'api-109', status: 429 } });
    expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
    // The same bucket as anonymous callers from that address; other addresses are not affected.
    expect((await hit(api, { 'x-forwarded-for': '192.0.2.1' })).status).toBe(429);
    expect((await from('192.0.2.2', 'Bearer not.a.token')).status).toBe(403);
    expect((await hit(api, { 'x-forwarded-for': '192.0.2.2' })).status).toBe(200);
  });

  it('a signed-in caller is counted once, per user, and not in the address bucket', async () => {
    const api = await start({ 'rateLimit:max': 1, 'rateLimit:authenticated:max': 2 });
    const alice = await api.token({ uid: 'alice' });
    expect((await api.call('GET', '/api/mail/mailboxes', { token: alice })).status).toBe(200);
    expect((await api.call('GET', '/api/mail/mailboxes', { token: alice })).status).toBe(200);
    expect((await api.call('GET', '/api/mail/mailboxes', { token: alice })).status).toBe(429);
    expect((await hit(api)).status).toBe(200); // the one anonymous request of the address
  });

  it.runIf(withRedis)('shares counters between two copies through Redis', async () => {
    const prefix = `svcmail-test-${randomBytes(4).toString('hex')}:`;
    const values = { 'rateLimit:max': 3, 'redis:url': TEST_REDIS_URL, 'redis:prefix': prefix };
    const a = await start(values);
    const b = await start(values);
    expect((await hit(a)).status).toBe(200);
    expect((await hit(b)).status).toBe(200);
    expect((await hit(a)).status).toBe(200);
    expect((await hit(b)).status).toBe(429); // the fourth request overall, on the other copy
  });
});
