import { Redis } from 'ioredis';
import { requirePeer } from './peers.js';

export const TEST_REDIS_URL = process.env.SVCMAIL_TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * Whether Redis answers at SVCMAIL_TEST_REDIS_URL; when it does not, the file says so in one line
 * and skips what needs it, or in CI fails (test/helpers/peers.ts).
 */
export async function redisAvailable(): Promise<boolean> {
  const r = new Redis(TEST_REDIS_URL, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, connectTimeout: 2000 });
  let cause: Error | undefined; // the connection's own error (the rejection only says it closed)
  r.on('error', (e: Error) => {
    cause ??= e;
  });
  try {
    await r.connect();
    await r.ping();
    return requirePeer('redis', true);
  } catch (e) {
    return requirePeer('redis', false, `not reachable at ${TEST_REDIS_URL} (${(cause ?? (e as Error)).message})`);
  } finally {
    r.disconnect();
  }
}
