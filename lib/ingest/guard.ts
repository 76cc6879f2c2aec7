import { createHash, timingSafeEqual } from 'node:crypto';
import type { RequestHandler } from 'express';
import { INGEST_SECRET_DEFAULT } from '../config/index.js';
import { ConfigError, type Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import { MemoryFailureCounters, type FailureCounters } from '../http/index.js';
import type { Logger } from '../log/index.js';

/**
 * Any of these means the request came through an HTTP proxy (Spec: Internal hand-off): each names
 * the HTTP client, the proxy chain, or the request as the client made it before a proxy. The MTA
 * calls /internal/mta directly and sends none of them.
 * - the standard ones: Forwarded (RFC 7239) and Via (RFC 9110, every proxy adds itself);
 * - the X-Forwarded-* family (For, Host, Proto, Port, Server, Prefix, Scheme, Ssl, By, ...), matched
 *   by its prefix (PROXY_HEADER_PREFIXES), and its older spellings X-Forwarded and Forwarded-For;
 * - the client address as proxies and CDNs name it: X-Real-IP (nginx), X-Client-IP, Client-IP,
 *   X-Originating-IP (Microsoft), X-Remote-IP, X-Remote-Addr, True-Client-IP (Akamai, Cloudflare),
 *   CF-Connecting-IP, CF-Connecting-IPv6, CF-Pseudo-IPv4 (Cloudflare), Fastly-Client-IP,
 *   X-Cluster-Client-IP (Rackspace, Riverbed), X-ProxyUser-Ip (Google), X-Original-Forwarded-For
 *   (ingress-nginx), WL-Proxy-Client-IP, Proxy-Client-IP (WebLogic and Apache plug-ins),
 *   X-Azure-ClientIP, X-Azure-SocketIP (Azure Front Door), X-AppEngine-User-IP (Google App Engine),
 *   DO-Connecting-IP (DigitalOcean), X-Envoy-External-Address (Envoy), X-BlueCoat-Via;
 * - the host as the client asked for it: X-Host, X-Original-Host (IIS ARR, Azure).
 * Not here: X-Original-URL and X-Rewrite-URL (a rewritten path, not a client; Express reads neither).
 * The hand-off's own envelope data, such as the SMTP client's address the spam scanner needs, travels
 * under X-Envelope-* names, which none of these is or starts like.
 */
export const PROXY_HEADERS = [
  'forwarded',
  'via',
  'x-forwarded',
  'forwarded-for',
  'x-real-ip',
  'x-client-ip',
  'client-ip',
  'x-originating-ip',
  'x-remote-ip',
  'x-remote-addr',
  'true-client-ip',
  'cf-connecting-ip',
  'cf-connecting-ipv6',
  'cf-pseudo-ipv4',
  'fastly-client-ip',
  'x-cluster-client-ip',
  'x-proxyuser-ip',
  'x-original-forwarded-for',
  'wl-proxy-client-ip',
  'proxy-client-ip',
  'x-azure-clientip',
  'x-azure-socketip',
  'x-appengine-user-ip',
  'do-connecting-ip',
  'x-envoy-external-address',
  'x-bluecoat-via',
  'x-host',
  'x-original-host',
] as const;

/** Header name prefixes that are proxy headers whatever follows (X-Forwarded-For, -Host, -Proto ...). */
export const PROXY_HEADER_PREFIXES = ['x-forwarded-'] as const;

const proxyNames = new Set<string>(PROXY_HEADERS);

/** The first proxy header among a request's header names (lower-case, as Node gives them), if any. */
export function proxyHeaderIn(headers: Record<string, unknown>): string | undefined {
  for (const name of Object.keys(headers)) {
    if (proxyNames.has(name) || PROXY_HEADER_PREFIXES.some((p) => name.startsWith(p))) return name;
  }
  return undefined;
}

/** Outside development the secret must differ from its default and have at least 16 characters. */
export function checkIngestSecret(config: Config): void {
  if (config.isDevelopment) return;
  const secret = config.get('mail:transport:ingest:secret');
  if (secret === INGEST_SECRET_DEFAULT)
    throw new ConfigError(
      'mail:transport:ingest:secret: still the default; set a random secret of at least 16 characters (svcmail setup generates one)',
    );
  if (secret.length < 16) throw new ConfigError('mail:transport:ingest:secret: must be at least 16 characters outside development');
}

const digest = (s: string) => createHash('sha256').update(s).digest();

export interface IngestGuardOptions {
  /**
   * Wrong-secret counters. Pass the rate limits' `failures('ingest')` so that, with redis:url set,
   * every api copy counts the same addresses together; without it they are kept in this process.
   */
  failures?: FailureCounters;
  log?: Logger;
}

/** The shared counters' outage: one warning per minute at most. */
function outageOf(log?: Logger) {
  let last = 0;
  return (err: unknown): void => {
    if (Date.now() - last >= 60_000) {
      last = Date.now();
      log?.warn(
        { err: err instanceof Error ? err.message : String(err) },
        'ingest-secret failure counters unavailable (Redis): counting wrong secrets in this process meanwhile',
      );
    }
  };
}

/**
 * The /internal/mta guard: no proxy headers (unless mail:internal:allow_forwarded), Bearer secret
 * compared in constant time, wrong secrets counted per address (429 once over the limit, then even
 * the right secret until the window ends). It answers 403, never 404: a 404 tells the MTA to reject
 * permanently. The counters are the failed-attempt counters of lib/http (Redis with redis:url, so
 * every api copy counts together). While they do not answer (redis:command_timeout_ms) this process
 * counts on its own: inbound mail keeps flowing (the lockout is defence in depth beside a 32-character
 * secret; refusing every hand-off would stop all mail while Redis is away), and an attacker gets at
 * most max_failures per copy for that time, as without redis:url.
 */
export function ingestGuard(config: Config, opts: IngestGuardOptions = {}): RequestHandler {
  const want = digest(config.get('mail:transport:ingest:secret'));
  const max = config.get('mail:internal:max_failures');
  const windowMs = config.get('mail:internal:failure_window_seconds') * 1000;
  const failures = opts.failures ?? new MemoryFailureCounters();
  if (!opts.failures && config.get('redis:url')) opts.log?.warn('wrong ingest secrets are counted per process although redis:url is set');
  const outage = outageOf(opts.log);
  const local = failures instanceof MemoryFailureCounters ? failures : new MemoryFailureCounters();
  const counted = async <T>(op: (c: FailureCounters) => Promise<T>): Promise<T> => {
    if (failures === local) return op(local);
    try {
      return await op(failures);
    } catch (err) {
      outage(err);
      return op(local);
    }
  };
  const admit = async (key: string, authorization: string): Promise<void> => {
    const wait = await counted((c) => c.blockedFor(key, max));
    if (wait > 0) {
      throw new ApiError('api-109', 'Too many wrong ingest secrets from this address', {
        headers: { 'Retry-After': String(Math.ceil(wait / 1000)) },
      });
    }
    const m = /^bearer\s+(.+)$/i.exec(authorization);
    if (m && timingSafeEqual(digest(m[1].trim()), want)) return;
    await counted((c) => c.add(key, windowMs));
    throw new ApiError('api-119', 'Forbidden: wrong or missing ingest secret', { details: [{ path: 'authorization', message: 'secret' }] });
  };
  return (req, _res, next) => {
    const proxied = config.get('mail:internal:allow_forwarded') ? undefined : proxyHeaderIn(req.headers);
    if (proxied) {
      return next(
        new ApiError('api-119', `Forbidden: /internal/mta does not take requests through a proxy (proxy header ${proxied} present)`, {
          details: [{ path: proxied, message: 'proxy-header' }],
        }),
      );
    }
    // Per peer address (the MTA connects directly; no proxy header is taken).
    admit(`a:${req.socket.remoteAddress ?? ''}`, req.headers.authorization ?? '').then(() => next(), next);
  };
}
