// The /internal/mta wrong-secret lockout across api copies (issue #29): with redis:url the copies
// count wrong secrets together in Redis, so an attacker spreading guesses over two copies still meets
// 429 after mail:internal:max_failures in total, and then even the right secret is refused on every
// copy until the window ends. Without redis:url each copy counts its own (per process). While Redis
// does not answer each copy counts on its own too: mail keeps flowing, the lockout still holds per copy.
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, describe, expect, it } from 'vitest';
import type { SettingName } from '../../../lib/config/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { storeBackends } from '../../helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../../helpers/redis.js';
import { freePort } from '../../helpers/scanners.js';
import { INGEST_SECRET } from './setup.js';

const [sqlite] = await storeBackends();
const withRedis = await redisAvailable();
const MAX = 4;

const open: TestApi[] = [];
afterAll(async () => {
  for (const a of open.splice(0)) await a.close();
});
async function copy(values: Partial<Record<SettingName, unknown>>): Promise<TestApi> {
  const api = await startTestApi(sqlite, {
    'mail:transport:ingest:secret': INGEST_SECRET,
    'mail:jobs:wake_address': '',
    'mail:internal:max_failures': MAX,
    ...values,
  });
  open.push(api);
  await seedUsers(api); // example.test with alice's mailbox: past the guard, the lookup answers 200
  return api;
}

/** A recipient lookup as the MTA makes it (the guard is the same on every /internal/mta route). */
async function lookup(api: TestApi, secret: string) {
  const t0 = Date.now();
  const r = await api.call('GET', '/internal/mta/resolve?rcpt=alice%40example.test', { headers: { authorization: `Bearer ${secret}` } });
  return { ...r, ms: Date.now() - t0 };
}

describe('the ingest-secret lockout across api copies', () => {
  it.runIf(withRedis)(
    'with redis:url: wrong secrets spread over two copies meet 429 after max_failures in total',
    async () => {
      const prefix = `svcmail-test-${randomBytes(4).toString('hex')}:`;
      const shared = { 'redis:url': TEST_REDIS_URL, 'redis:prefix': prefix, 'mail:internal:failure_window_seconds': 2 };
      const a = await copy(shared);
      const b = await copy(shared);
      const redis = new Redis(TEST_REDIS_URL);
      try {
        const statuses: number[] = [];
        for (let i = 0; i < MAX; i++) statuses.push((await lookup(i % 2 ? b : a, `wrong-${i}`)).status);
        expect(statuses).toEqual([403, 403, 403, 403]); // MAX wrong secrets in total, two on each copy
        for (const api of [a, b]) {
          const over = await lookup(api, 'wrong-again');
          expect(over.status).toBe(429);
          expect(over.body).toMatchObject({ code: 'api-109' });
          expect(Number(over.headers.get('retry-after'))).toBeGreaterThan(0);
          expect(Number(over.headers.get('retry-after'))).toBeLessThanOrEqual(2);
          // The right secret is refused too, on both copies, for the rest of the window.
          expect((await lookup(api, INGEST_SECRET)).status).toBe(429);
        }
        // The count lives in Redis under the deployment's prefix (one counter: one address), hashed.
        const keys = await redis.keys(`${prefix}fail:ingest:*`);
        expect(keys).toHaveLength(1);
        expect(keys[0]).toMatch(new RegExp(`^${prefix}fail:ingest:[0-9a-f]{64}$`));
        expect(Number(await redis.get(keys[0]))).toBe(MAX);
        // When the window ends, the right secret passes again on both copies.
        await new Promise((r) => setTimeout(r, 2100));
        expect((await lookup(a, INGEST_SECRET)).status).toBe(200);
        expect((await lookup(b, INGEST_SECRET)).status).toBe(200);
      } finally {
        const keys = await redis.keys(`${prefix}*`);
        if (keys.length) await redis.del(...keys);
        redis.disconnect();
      }
    },
    30_000,
  );

  it('without redis:url each copy counts its own wrong secrets (per process)', async () => {
    const a = await copy({});
    const b = await copy({});
    for (let i = 0; i < MAX; i++) expect((await lookup(a, `wrong-${i}`)).status).toBe(403);
    expect((await lookup(a, `wrong-${MAX}`)).status).toBe(429);
    expect((await lookup(a, INGEST_SECRET)).status).toBe(429);
    // The other copy has counted none of them.
    for (let i = 0; i < MAX - 1; i++) expect((await lookup(b, `wrong-${i}`)).status).toBe(403);
    expect((await lookup(b, INGEST_SECRET)).status).toBe(200);
  });

  it('while Redis does not answer, mail keeps flowing and wrong secrets are counted in the process, in bounded time', async () => {
    const api = await copy({
      'redis:url': `redis://127.0.0.1:${await freePort()}`,
      'redis:prefix': `svcmail-test-${randomBytes(4).toString('hex')}:`,
      'redis:command_timeout_ms': 300,
    });
    const right = await lookup(api, INGEST_SECRET);
    expect(right.status).toBe(200);
    expect(right.ms).toBeLessThan(5000);
    for (let i = 0; i < MAX; i++) expect((await lookup(api, 'wrong')).status).toBe(403);
    const locked = await lookup(api, INGEST_SECRET);
    expect([locked.status, locked.body?.code]).toEqual([429, 'api-109']);
    expect(locked.ms).toBeLessThan(5000);
    // A proxy header is still refused first, without the counters.
    const proxied = await api.call('GET', '/internal/mta/domain?name=example.test', {
      headers: { authorization: `Bearer ${INGEST_SECRET}`, 'x-forwarded-for': '192.0.2.1' },
    });
    expect(proxied.status).toBe(403);
  }, 30_000);
});
