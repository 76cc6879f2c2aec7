import { Redis, type RedisOptions } from 'ioredis';
import type { Config } from '../config/index.js';

/** Connects a Redis client given the options of its use (timeouts, queueing). */
export type RedisConnector = (opts: RedisOptions) => Redis;

const hostPort = (a: string) => {
  const i = a.lastIndexOf(':');
  return { host: a.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(a.slice(i + 1)) };
};

/**
 * Every Redis connection of the product, as configured: redis:url; or, with redis:sentinels, the
 * master the Sentinels name for redis:sentinel_name — ioredis asks them on (re)connect and follows a
 * failover (+switch-master) without a restart. The URL's password, user name and database still apply.
 */
export function redisConnector(config: Config): RedisConnector {
  const url = config.get('redis:url');
  const sentinels = config.get('redis:sentinels');
  if (!sentinels.length) return (opts) => new Redis(url, opts);
  const u = new URL(url);
  const auth = {
    ...(u.username ? { username: decodeURIComponent(u.username) } : {}),
    ...(u.password ? { password: decodeURIComponent(u.password) } : {}),
    db: Number(u.pathname.slice(1) || 0),
  };
  return (opts) => new Redis({ ...opts, ...auth, sentinels: sentinels.map(hostPort), name: config.get('redis:sentinel_name') });
}
