import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { INGEST_SECRET_DEFAULT } from '../config/settings/appliance.js';
import { ConfigError, type Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';

/** Any of these means the request came through a proxy (Spec: Internal hand-off). */
export const PROXY_HEADERS = ['x-forwarded-for', 'forwarded', 'x-real-ip', 'x-forwarded-host', 'x-forwarded-proto', 'x-forwarded-port', 'x-client-ip', 'true-client-ip', 'cf-connecting-ip', 'x-cluster-client-ip', 'x-original-forwarded-for', 'via'];

/** Outside development the secret must differ from its default and have at least 16 characters. */
export function checkIngestSecret(config: Config): void {
  if (config.isDevelopment) return;
  const secret = config.get('mail:transport:ingest:secret');
  if (secret === INGEST_SECRET_DEFAULT) throw new ConfigError('mail:transport:ingest:secret: still the default; set a random secret of at least 16 characters (svcmail setup generates one)');
  if (secret.length < 16) throw new ConfigError('mail:transport:ingest:secret: must be at least 16 characters outside development');
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * The /internal/mta guard: no proxy headers (unless mail:internal:allow_forwarded), Bearer secret
 * compared in constant time, wrong secrets counted per address (429 once over the limit). It answers
 * 403, never 404: a 404 tells the MTA to reject permanently.
 */
export function ingestGuard(config: Config): RequestHandler {
  const want = digest(config.get('mail:transport:ingest:secret'));
  const max = config.get('mail:internal:max_failures');
  const windowMs = config.get('mail:internal:failure_window_seconds') * 1000;
  const failures = new Map<string, { count: number; resetAt: number }>();
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const [ip, f] of failures) if (f.resetAt <= now) failures.delete(ip);
  }, 60_000);
  sweep.unref();
  return (req, _res, next) => {
    const ip = req.socket.remoteAddress ?? '';
    if (!config.get('mail:internal:allow_forwarded') && PROXY_HEADERS.some((h) => req.headers[h] !== undefined)) {
      return next(new ApiError('api-119', 'Forbidden: /internal/mta does not take requests through a proxy (proxy header present)', { details: [{ path: 'headers', message: 'proxy-header' }] }));
    }
    const now = Date.now();
    const f = failures.get(ip);
    if (f && f.resetAt > now && f.count >= max) {
      return next(new ApiError('api-109', 'Too many wrong ingest secrets from this address', { headers: { 'Retry-After': String(Math.ceil((f.resetAt - now) / 1000)) } }));
    }
    const header = req.headers.authorization ?? '';
    const m = /^bearer\s+(.+)$/i.exec(header);
    if (m && timingSafeEqual(digest(m[1].trim()), want)) return next();
    if (!f || f.resetAt <= now) failures.set(ip, { count: 1, resetAt: now + windowMs });
    else f.count++;
    next(new ApiError('api-119', 'Forbidden: wrong or missing ingest secret', { details: [{ path: 'authorization', message: 'secret' }] }));
  };
}
