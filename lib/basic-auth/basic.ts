import { createHash } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { ownersOf } from '../acl/index.js';
import { devAutoLoginActive, tokenSecret, TokenVerifier, type Principal } from '../auth/index.js';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import { MemoryFailureCounters, type FailureCounters } from '../http/index.js';
import type { Logger } from '../log/index.js';
import { AddressModel } from '../mail/index.js';
import type { Store } from '../storage/index.js';

// Spec: Authentication / App passwords (Basic). The service never checks a password itself: the
// sign-in service does, and answers with an ordinary access token that is verified like any other.

export interface BasicAuthDeps {
  store: Store;
  log?: Logger;
  /** The clock (ms); tests and nothing else replace it. */
  now?: () => number;
  /**
   * Failed-attempt counters. Pass the rate limits' `failures('basic')` so that, with redis:url set,
   * every copy of the daemon counts together; without it they are kept in this process.
   */
  failures?: FailureCounters;
}

const CACHE_MAX = 10_000;
const SIGNIN_TIMEOUT_MS = 10_000;

/** True when the path is one of mail:basic_auth:paths or below one. Dot segments never match. */
export function isBasicAuthPath(config: Config, path: string): boolean {
  let segments: string[];
  try {
    segments = path.split('/').map((s) => decodeURIComponent(s));
  } catch {
    return false;
  }
  if (segments.some((s) => s === '.' || s === '..' || s.includes('/'))) return false;
  return config.get('mail:basic_auth:paths').some((p) => {
    const base = p.replace(/\/+$/, '');
    return base === '' || path === base || path.startsWith(`${base}/`);
  });
}

export function isBasicHeader(header: string | undefined): boolean {
  return typeof header === 'string' && /^basic(\s|$)/i.test(header);
}

function parseBasic(header: string): { username: string; password: string } | null {
  const m = /^basic\s+([A-Za-z0-9+/]+={0,2})\s*$/i.exec(header);
  if (!m) return null;
  const text = Buffer.from(m[1], 'base64').toString('utf8');
  const colon = text.indexOf(':');
  if (colon <= 0) return null;
  return { username: text.slice(0, colon), password: text.slice(colon + 1) };
}

function rejected(config: Config, message?: string): ApiError {
  return new ApiError('api-118', message, {
    headers: { 'WWW-Authenticate': `Basic realm="${config.get('mail:basic_auth:realm')}", charset="UTF-8"` },
  });
}

/** A mailbox address is asked about as its owner's uid; anything else is asked about as given. */
async function signinUsername(store: Store, username: string): Promise<string | null> {
  if (!username.includes('@')) return username;
  const address = username.trim().toLowerCase();
  const row = await store.repo<{ address: string; mailboxUid: string }>(AddressModel).findOne({ address });
  if (!row) return username;
  const owners = await ownersOf(store, row.mailboxUid);
  // A mailbox with several owners does not say whose app password this is.
  return owners.length === 1 ? owners[0] : null;
}

/**
 * App passwords over HTTP Basic on mail:basic_auth:paths (and below) only. Mount before
 * `authenticate`: a request it signs in carries req.principal (via 'basic') and authenticate leaves
 * it alone; a JWT (Bearer or cookie) is left to authenticate; Basic anywhere else is refused there.
 * Off while development auto-login is active.
 */
export function basicAuth(config: Config, deps: BasicAuthDeps): RequestHandler {
  if (devAutoLoginActive(config)) return (_req, _res, next) => next();
  const now = deps.now ?? Date.now;
  const verifier = new TokenVerifier(config, tokenSecret(config));
  const cache = new Map<string, { principal: Principal; until: number }>();
  const failures = deps.failures ?? new MemoryFailureCounters(now);
  if (!deps.failures && config.get('redis:url'))
    deps.log?.warn('Basic app-password failures are counted per process although redis:url is set');
  const windowMs = config.get('mail:basic_auth:throttle:window_ms');
  const limits = {
    pair: config.get('mail:basic_auth:throttle:per_address_user'),
    address: config.get('mail:basic_auth:throttle:per_address'),
    user: config.get('mail:basic_auth:throttle:per_user'),
  };

  const keysOf = (req: Request, username: string) => {
    const address = ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? '', 64);
    const user = username.trim().toLowerCase();
    return { pair: `p:${address}\n${user}`, address: `a:${address}`, user: `u:${user}` };
  };

  async function askSigninService(username: string, password: string): Promise<string | null> {
    const base = config.get('mail:auth_server_url').replace(/\/+$/, '');
    if (!base) throw new ApiError('api-113', 'App passwords cannot be checked: mail:auth_server_url is not set');
    let res: Response;
    try {
      res = await fetch(`${base}/api/auth/password`, {
        method: 'GET',
        headers: {
          authorization: `Basic ${Buffer.from(`${username}:${password}`, 'utf8').toString('base64')}`,
          accept: 'application/json',
        },
        redirect: 'error',
        signal: AbortSignal.timeout(SIGNIN_TIMEOUT_MS),
      });
    } catch (err) {
      deps.log?.warn({ err }, 'sign-in service unreachable for an app-password check');
      throw new ApiError('api-113', 'The sign-in service does not answer; retry later');
    }
    if (res.status === 401 || res.status === 403) {
      await res.body?.cancel();
      return null;
    }
    const body = (await res.json().catch(() => null)) as { token?: unknown } | null;
    if (!res.ok || !body || typeof body.token !== 'string') {
      deps.log?.warn({ status: res.status }, 'unexpected answer from the sign-in service to an app-password check');
      throw new ApiError('api-113', 'The sign-in service gave no usable answer; retry later');
    }
    return body.token;
  }

  // Throttling fails closed: without its counters (Redis down) no Basic attempt is checked.
  async function counted<T>(op: () => Promise<T>): Promise<T> {
    try {
      return await op();
    } catch (err) {
      deps.log?.warn({ err }, 'Basic app-password failure counters unavailable');
      throw new ApiError('api-113', 'App passwords cannot be checked right now; retry later');
    }
  }

  return async (req, _res, next) => {
    try {
      const header = req.headers.authorization;
      if (!isBasicHeader(header) || !isBasicAuthPath(config, req.path)) return next();
      const cred = parseBasic(header!);
      const keys = keysOf(req, cred?.username ?? '');
      const wait = Math.max(
        ...(await counted(() =>
          Promise.all([
            failures.blockedFor(keys.address, limits.address),
            cred ? failures.blockedFor(keys.pair, limits.pair) : 0,
            cred ? failures.blockedFor(keys.user, limits.user) : 0,
          ]),
        )),
      );
      if (wait > 0) {
        const seconds = Math.max(1, Math.ceil(wait / 1000));
        throw new ApiError('api-109', `Too many failed sign-in attempts; retry in ${seconds} s`, {
          headers: { 'Retry-After': String(seconds) },
        });
      }
      const fail = async (message?: string) => {
        await counted(() =>
          Promise.all([
            failures.add(keys.address, windowMs),
            ...(cred ? [failures.add(keys.pair, windowMs), failures.add(keys.user, windowMs)] : []),
          ]),
        );
        return rejected(config, message);
      };
      if (!cred) throw await fail('Malformed Basic credentials');

      const cacheKey = createHash('sha256').update(header!).digest('hex');
      const hit = cache.get(cacheKey);
      if (hit && hit.until > now()) {
        req.principal = { ...hit.principal };
        return next();
      }
      if (hit) cache.delete(cacheKey);

      const username = await signinUsername(deps.store, cred.username);
      if (username === null) throw await fail();
      const token = await askSigninService(username, cred.password);
      if (token === null) throw await fail();
      const verified = await verifier.verify(token, 'basic');
      // An app password never carries elevation, whatever the token says.
      const principal: Principal = { ...verified, elevatedAt: null, via: 'basic' };
      await counted(() => failures.clear(keys.pair));
      const ttl = config.get('mail:basic_auth:cache_ttl_ms');
      const until = Math.min(now() + ttl, principal.expiresAt);
      if (ttl > 0 && until > now()) {
        if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
        cache.set(cacheKey, { principal, until });
      }
      req.principal = { ...principal };
      next();
    } catch (e) {
      next(e);
    }
  };
}
