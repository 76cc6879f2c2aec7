import type { RequestHandler } from 'express';
import { ipKeyGenerator, MemoryStore, rateLimit, type Store as LimitStore } from 'express-rate-limit';
import { RedisStore, type RedisReply } from 'rate-limit-redis';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import { closeRedis, redisConnector } from '../events/index.js';
import type { Logger } from '../log/index.js';
import { MemoryFailureCounters, RedisFailureCounters, type FailureCounters } from './failure-counters.js';

// Spec: Limits — rate limiting. Anonymous callers use rateLimit, signed-in callers the larger
// rateLimit:authenticated; IPv6 clients count per /64; client addresses come from X-Forwarded-For
// only through trusted_proxies (Express 'trust proxy'); counters are shared through Redis when
// redis:url is set so every copy of a daemon counts together. While Redis does not answer (within
// redis:command_timeout_ms) the limits fail open: an outage of the counters must not take the API
// down with it. Basic app-password throttling (failures()) fails closed instead (lib/basic-auth/basic.ts).

export interface RateLimits {
  /** Anonymous callers per address, signed-in callers per user. Mount after authentication. */
  general: RequestHandler;
  /** A per-user limiter of its own (the send route), sharing the same store kind. */
  perUser(name: string, windowMs: number, max: number): RequestHandler;
  /**
   * Runs an authentication middleware; when it fails (a bad, expired or forged token, rejected Basic
   * credentials) the request is counted by the general limiter before the error is answered, so
   * floods of bad credentials are limited too. A request that passes is counted later by `general`
   * only, never twice.
   */
  countingFailures(handler: RequestHandler): RequestHandler;
  /** Failed-attempt counters (Basic throttling), shared through the same Redis when redis:url is set. */
  failures(name: string): FailureCounters;
  /**
   * Counts one attempt that never reaches Express (a /push upgrade) in the counters `general`
   * uses: an anonymous caller per address (IPv6 per /64), a signed-in caller per user. Answers the
   * seconds until its window ends when the attempt is over the limit, else 0. Fails open (0) while
   * Redis does not answer, as the middleware does.
   */
  count(caller: { ip: string } | { uid: string }): Promise<number>;
  close(): Promise<void>;
}

function answer429(): RequestHandler {
  return (req, res, next) => {
    const reset = (req as unknown as { rateLimit?: { resetTime?: Date } }).rateLimit?.resetTime;
    const seconds = reset ? Math.max(1, Math.ceil((reset.getTime() - Date.now()) / 1000)) : 60;
    next(new ApiError('api-109', `Too many requests; retry in ${seconds} s`, { headers: { 'Retry-After': String(seconds) } }));
  };
}

/** One warning per minute at most while the counters are unavailable (every request would log one). */
function counterWarnings(log?: Logger) {
  let last = 0;
  const warn = (err: unknown, msg: string) => {
    if (Date.now() - last < 60_000) return;
    last = Date.now();
    log?.warn({ err: err instanceof Error ? err.message : String(err) }, msg);
  };
  // express-rate-limit also reports its configuration checks (codes ERR_ERL_*) here: those are not throttled.
  const isCheck = (err: unknown) => String((err as { code?: unknown })?.code ?? '').startsWith('ERR_ERL');
  const check = (err: unknown) => log?.warn({ err: err instanceof Error ? err.message : String(err) }, 'rate limit configuration');
  return {
    error: (err: unknown) =>
      isCheck(err) ? check(err) : warn(err, 'rate-limit counters unavailable (Redis): requests pass without rate limiting'),
    warn: (err: unknown) => (isCheck(err) ? check(err) : warn(err, 'rate limit')),
  };
}

export function createRateLimits(config: Config, log?: Logger): RateLimits {
  const url = config.get('redis:url');
  const redis = url
    ? redisConnector(config)({
        lazyConnect: false,
        maxRetriesPerRequest: 2,
        enableOfflineQueue: true,
        commandTimeout: config.get('redis:command_timeout_ms'),
      })
    : null;
  const warnings = counterWarnings(log);
  redis?.on('error', (e: Error) => warnings.error(e));
  const store = (prefix: string): LimitStore | undefined => {
    if (!redis) return undefined;
    const s = new RedisStore({
      prefix: `${config.get('redis:prefix')}rl:${prefix}:`,
      sendCommand: (command: string, ...args: string[]) => redis.call(command, ...args) as Promise<RedisReply>,
    });
    // The store loads its scripts at once and awaits them only on first use: with Redis down those
    // would be unhandled rejections (a crash). Use retries the load (rate-limit-redis).
    s.incrementScriptSha.catch(() => undefined);
    s.getScriptSha.catch(() => undefined);
    return s;
  };
  const handler = answer429();
  const common = {
    standardHeaders: 'draft-7' as const,
    legacyHeaders: false,
    handler: (req: Parameters<RequestHandler>[0], res: Parameters<RequestHandler>[1], next: Parameters<RequestHandler>[2]) =>
      handler(req, res, next),
    validate: { trustProxy: false },
    passOnStoreError: true,
    logger: warnings,
  };
  // The stores are made here (a MemoryStore is what rateLimit would make itself) so count() shares them.
  const anonStore = store('anon') ?? new MemoryStore();
  const userStore = store('user') ?? new MemoryStore();
  const anonymous = rateLimit({
    ...common,
    windowMs: config.get('rateLimit:window_ms'),
    limit: config.get('rateLimit:max'),
    store: anonStore,
    skip: (req) => Boolean(req.principal),
    keyGenerator: (req) => ipKeyGenerator(req.ip ?? '', 64),
  });
  const signedIn = rateLimit({
    ...common,
    windowMs: config.get('rateLimit:authenticated:window_ms'),
    limit: config.get('rateLimit:authenticated:max'),
    store: userStore,
    skip: (req) => !req.principal,
    keyGenerator: (req) => `u:${req.principal!.uid}`,
  });
  // Each request goes to the one limiter that counts it (both skip the other kind of caller): one
  // limiter's asynchronous run per request instead of two.
  const general: RequestHandler = (req, res, next) => (req.principal ? signedIn(req, res, next) : anonymous(req, res, next));
  return {
    general,
    countingFailures: (handler) => (req, res, next) =>
      handler(req, res, (err?: unknown) => {
        if (!err || err === 'route' || err === 'router') return next(err);
        // Over the limit, the 429 replaces the authentication error; otherwise the error goes on.
        general(req, res, (limited?: unknown) => next(limited ?? err));
      }),
    async count(caller) {
      const [s, key, limit] =
        'uid' in caller
          ? [userStore, `u:${caller.uid}`, config.get('rateLimit:authenticated:max')]
          : [anonStore, ipKeyGenerator(caller.ip, 64), config.get('rateLimit:max')];
      try {
        const { totalHits, resetTime } = await s.increment(key);
        if (totalHits <= limit) return 0;
        return resetTime ? Math.max(1, Math.ceil((resetTime.getTime() - Date.now()) / 1000)) : 60;
      } catch (e) {
        warnings.error(e);
        return 0;
      }
    },
    failures: (name) =>
      redis ? new RedisFailureCounters(redis, `${config.get('redis:prefix')}fail:${name}:`) : new MemoryFailureCounters(),
    perUser: (name, windowMs, max) =>
      rateLimit({
        ...common,
        windowMs,
        limit: max,
        store: store(name),
        keyGenerator: (req) => (req.principal ? `u:${req.principal.uid}` : ipKeyGenerator(req.ip ?? '', 64)),
      }),
    async close() {
      if (redis) await closeRedis(redis);
    },
  };
}

/** Express 'trust proxy' from trusted_proxies: nobody's X-Forwarded-For counts unless listed. */
export function trustProxySetting(config: Config): string[] | false {
  const list = config.get('trusted_proxies');
  return list.length ? list : false;
}
