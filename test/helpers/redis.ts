import { Redis } from 'ioredis';

export const TEST_REDIS_URL = process.env.SVCMAIL_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/** In CI a test that needs Redis fails when it is missing; elsewhere it is skipped. */
export async function redisAvailable(): Promise<boolean> {
  const r = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 1, connectTimeout: 1000 });
  try {
    await r.connect();
    await r.ping();
    return true;
  } catch (e) {
    if (process.env.CI === 'true') throw new Error(`Redis is required in CI but not reachable at ${TEST_REDIS_URL}: ${(e as Error).message}`);
    return false;
  } finally {
    r.disconnect();
  }
}
