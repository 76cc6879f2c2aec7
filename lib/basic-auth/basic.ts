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

/**
 * True when the path is one of mail:basic_auth:paths or below one, in any letter case (the
 * protocol routes match case-insensitively and mobile clients vary the case). Dot segments never match.
 */
export function isBasicAuthPath(config: Config, path: string): boolean {
  let segments: string[];
  try {
    segments = path.split('/').map((s) => decodeURIComponent(s));
  } catch {
    return false;
  }
  if (segments.some((s) => s === '.' || s === '..' || s.includes('/'))) return false;
  const lower = path.toLowerCase();
  return config.get('mail:basic_auth:paths').some((p) => {
    const base = p.replace(/\/+$/, '').toLowerCase();
    return base === '' || lower === base || lower.startsWith(`${base}/`);
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

/** The failed-attempt counters and the limits they are held to (mail:basic_auth:throttle). */
interface Throttle {
  failures: FailureCounters;
  windowMs: number;
  limits: { pair: number; address: number; user: number };
  log?: Logger;
}

type ThrottleKeys = { pair: string; address: string; user: string };

type PrincipalCache = Map<string, { principal: Principal; until: number }>;

/** Reads the throttle settings; failures are counted where deps says, else in this process. */
function throttleOf(config: Config, deps: BasicAuthDeps, now: () => number): Throttle {
  const failures = deps.failures ?? new MemoryFailureCounters(now);
  if (!deps.failures && config.get('redis:url'))
    deps.log?.warn('Basic app-password failures are counted per process although redis:url is set');
  return {
    failures,
    windowMs: config.get('mail:basic_auth:throttle:window_ms'),
    limits: {
      pair: config.get('mail:basic_auth:throttle:per_address_user'),
      address: config.get('mail:basic_auth:throttle:per_address'),
      user: config.get('mail:basic_auth:throttle:per_user'),
    },
    log: deps.log,
  };
}

/** Names the counters of a request: client address and user together, the address alone, the user alone. */
function keysOf(req: Request, username: string): ThrottleKeys {
  const address = ipKeyGenerator(req.ip ?? req.socket.remoteAddress ?? '', 64);
  const user = username.trim().toLowerCase();
  return { pair: `p:${address}\n${user}`, address: `a:${address}`, user: `u:${user}` };
}

/** Runs a counter operation; when the counters fail (Redis down) the attempt is refused with api-113. */
async function counted<T>(log: Logger | undefined, op: () => Promise<T>): Promise<T> {
  // Throttling fails closed: without its counters (Redis down) no Basic attempt is checked.
  try {
    return await op();
  } catch (err) {
    log?.warn({ err }, 'Basic app-password failure counters unavailable');
    throw new ApiError('api-113', 'App passwords cannot be checked right now; retry later');
  }
}

/** Refuses the attempt (api-109 with Retry-After) while its address, or with credentials its pair or user, is over its limit. */
async function refuseWhileBlocked(t: Throttle, keys: ThrottleKeys, withUser: boolean): Promise<void> {
  const wait = Math.max(
    ...(await counted(t.log, () =>
      Promise.all([
        t.failures.blockedFor(keys.address, t.limits.address),
        withUser ? t.failures.blockedFor(keys.pair, t.limits.pair) : 0,
        withUser ? t.failures.blockedFor(keys.user, t.limits.user) : 0,
      ]),
    )),
  );
  if (wait > 0) {
    const seconds = Math.max(1, Math.ceil(wait / 1000));
    throw new ApiError('api-109', `Too many failed sign-in attempts; retry in ${seconds} s`, {
      headers: { 'Retry-After': String(seconds) },
    });
  }
}

/** Counts a failed attempt against the address (and with credentials the pair and the user); returns the 401 to throw. */
async function failed(config: Config, t: Throttle, keys: ThrottleKeys, withUser: boolean, message?: string): Promise<ApiError> {
  await counted(t.log, () =>
    Promise.all([
      t.failures.add(keys.address, t.windowMs),
      ...(withUser ? [t.failures.add(keys.pair, t.windowMs), t.failures.add(keys.user, t.windowMs)] : []),
    ]),
  );
  return rejected(config, message);
}

/** Asks the sign-in service to check an app password: its access token, or null when it refuses the password. */
async function askSigninService(config: Config, log: Logger | undefined, username: string, password: string): Promise<string | null> {
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
    log?.warn({ err }, 'sign-in service unreachable for an app-password check');
    throw new ApiError('api-113', 'The sign-in service does not answer; retry later');
  }
  if (res.status === 401 || res.status === 403) {
    await res.body?.cancel();
    return null;
  }
  const body = (await res.json().catch(() => null)) as { token?: unknown } | null;
  if (!res.ok || !body || typeof body.token !== 'string') {
    log?.warn({ status: res.status }, 'unexpected answer from the sign-in service to an app-password check');
    throw new ApiError('api-113', 'The sign-in service gave no usable answer; retry later');
  }
  return body.token;
}

/** Signs the credentials in through the sign-in service: the principal (via 'basic'), or null when they are refused. */
async function signIn(
  config: Config,
  deps: BasicAuthDeps,
  verifier: TokenVerifier,
  cred: { username: string; password: string },
): Promise<Principal | null> {
  const username = await signinUsername(deps.store, cred.username);
  if (username === null) return null;
  const token = await askSigninService(config, deps.log, username, cred.password);
  if (token === null) return null;
  const verified = await verifier.verify(token, 'basic');
  // An app password never carries elevation, whatever the token says.
  return { ...verified, elevatedAt: null, via: 'basic' };
}

/** Returns the cached principal of these exact credentials while it is fresh; a stale entry is dropped. */
function cachedPrincipal(cache: PrincipalCache, cacheKey: string, now: () => number): Principal | null {
  const hit = cache.get(cacheKey);
  if (hit && hit.until > now()) return hit.principal;
  if (hit) cache.delete(cacheKey);
  return null;
}

/** Caches a principal for mail:basic_auth:cache_ttl_ms, never past its token's expiry; the oldest entry makes room. */
function remember(config: Config, cache: PrincipalCache, cacheKey: string, principal: Principal, now: () => number): void {
  const ttl = config.get('mail:basic_auth:cache_ttl_ms');
  const until = Math.min(now() + ttl, principal.expiresAt);
  if (ttl > 0 && until > now()) {
    if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
    cache.set(cacheKey, { principal, until });
  }
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
  const cache: PrincipalCache = new Map();
  const throttle = throttleOf(config, deps, now);

  return async (req, _res, next) => {
    try {
      const header = req.headers.authorization;
      if (!isBasicHeader(header) || !isBasicAuthPath(config, req.path)) return next();
      const cred = parseBasic(header!);
      const keys = keysOf(req, cred?.username ?? '');
      await refuseWhileBlocked(throttle, keys, Boolean(cred));
      const fail = (message?: string) => failed(config, throttle, keys, Boolean(cred), message);
      if (!cred) throw await fail('Malformed Basic credentials');

      const cacheKey = createHash('sha256').update(header!).digest('hex');
      const hit = cachedPrincipal(cache, cacheKey, now);
      if (hit) {
        req.principal = { ...hit };
        return next();
      }

      const principal = await signIn(config, deps, verifier, cred);
      if (principal === null) throw await fail();
      await counted(throttle.log, () => throttle.failures.clear(keys.pair));
      remember(config, cache, cacheKey, principal, now);
      req.principal = { ...principal };
      next();
    } catch (e) {
      next(e);
    }
  };
}
