import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import helmet from 'helmet';
import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { ApiError } from '../errors/index.js';

/**
 * A request id on every request and answer; a child logger that carries it. And the query string
 * parsed once: Express 5's req.query is a getter that parses it again on every read (the sign-in
 * check, the NUL check, the route and the list parser each read it).
 */
export function requestContext(log: Logger): RequestHandler {
  return (req, res, next) => {
    Object.defineProperty(req, 'query', { value: req.query, writable: true, configurable: true, enumerable: true });
    const incoming = req.headers['x-request-id'];
    req.requestId = typeof incoming === 'string' && /^[\w-]{1,64}$/.test(incoming) ? incoming : randomUUID();
    req.log = log.child({ reqId: req.requestId });
    res.setHeader('X-Request-Id', req.requestId);
    const started = process.hrtime.bigint();
    res.on('finish', () => {
      if (res.statusCode >= 500)
        req.log!.warn(
          {
            method: req.method,
            url: req.originalUrl.split('?')[0],
            status: res.statusCode,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'request failed',
        );
      else if (log.isLevelEnabled('debug'))
        req.log!.debug(
          {
            method: req.method,
            url: req.originalUrl.split('?')[0],
            status: res.statusCode,
            ms: Number(process.hrtime.bigint() - started) / 1e6,
          },
          'request',
        );
    });
    next();
  };
}

/**
 * request_timeout_ms: a request whose answer has not started this long after it arrived gets 503
 * api-113 (Spec: Errors — no internals; a hanging datastore must not hold clients and the MTA's
 * hand-off forever). A request still uploading its body is left to Node's own server.requestTimeout.
 * The handler keeps running; whatever it answers later is dropped by the error handler.
 */
export function requestTimeout(ms: number): RequestHandler {
  if (!ms) return (_req, _res, next) => next();
  return (req, res, next) => {
    let timer: NodeJS.Timeout;
    const fire = () => {
      if (res.headersSent) return;
      if (!req.complete) {
        timer = setTimeout(fire, ms);
        return;
      }
      res.locals.timedOut = true;
      req.log?.warn({ method: req.method, url: req.originalUrl.split('?')[0], ms }, 'no answer within request_timeout_ms: answered 503');
      const e = new ApiError('api-113', `No answer within ${ms} ms; retry later`);
      res.status(e.status).json(e.toBody());
    };
    timer = setTimeout(fire, ms);
    const stop = () => clearTimeout(timer);
    res.once('finish', stop);
    res.once('close', stop);
    next();
  };
}

/**
 * Whether an answer is served over HTTPS as far as HSTS goes. The public URL decides when it is known:
 * mail:base_url, or, while that is empty, https://<mail:host> (as that setting says). An https one
 * means browsers reach this daemon only through the TLS proxy in front of it (listen:api is loopback
 * by default), so every answer gets HSTS; an http:// one means none does. With neither set (a
 * development machine), the request itself decides: req.secure, i.e. a TLS socket or
 * X-Forwarded-Proto: https from a trusted_proxies address. Browsers ignore the header over plain
 * HTTP anyway (RFC 6797 section 8.1).
 */
export function servedOverHttps(config: Config): (req: Request) => boolean {
  const base = config.get('mail:base_url');
  const host = config.get('mail:host');
  if (base) {
    const https = base.toLowerCase().startsWith('https:');
    return () => https;
  }
  if (host) return () => true;
  return (req) => req.secure;
}

/**
 * Headers every answer carries, errors and downloads included (what a Mozilla Observatory scan checks),
 * set by helmet: nosniff, no framing, no referrer, a Content-Security-Policy that allows nothing (pages,
 * the OpenAPI viewer and downloads set their own), the cross-origin isolation headers (CORP and COOP
 * same-origin: no other site embeds our answers or keeps a handle on our windows; CORS reads are not
 * affected by CORP), no cross-domain policies, and helmet's other defaults (Origin-Agent-Cluster,
 * X-DNS-Prefetch-Control off, X-XSS-Protection 0). Set here beside it: HSTS only over HTTPS
 * (mail:security:hsts_max_age_seconds, servedOverHttps: helmet would send it over plain HTTP too), no
 * caching, and a Permissions-Policy turning off the browser features no page here uses (helmet has
 * none). COEP stays off: the OpenAPI viewer and mail bodies load same-origin resources only, and COEP
 * would only refuse what CORP already governs. The service sets no cookies: the sign-in service does.
 */
export function securityHeaders(config: Config): RequestHandler {
  const maxAge = config.get('mail:security:hsts_max_age_seconds');
  const https = servedOverHttps(config);
  const hsts = `max-age=${maxAge}`;
  const standard = helmet({
    contentSecurityPolicy: { useDefaults: false, directives: CSP_DIRECTIVES },
    crossOriginEmbedderPolicy: false,
    crossOriginOpenerPolicy: { policy: 'same-origin' },
    crossOriginResourcePolicy: { policy: 'same-origin' },
    referrerPolicy: { policy: 'no-referrer' },
    strictTransportSecurity: false,
    xFrameOptions: { action: 'deny' },
    xPermittedCrossDomainPolicies: { permittedPolicies: 'none' },
  });
  return (req, res, next) => {
    if (maxAge > 0 && https(req)) res.setHeader('Strict-Transport-Security', hsts);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Permissions-Policy', PERMISSIONS_POLICY);
    standard(req, res, next);
  };
}

const CSP_DIRECTIVES = { defaultSrc: ["'none'"], frameAncestors: ["'none'"], baseUri: ["'none'"], formAction: ["'none'"] };
const PERMISSIONS_POLICY =
  'accelerometer=(), camera=(), display-capture=(), geolocation=(), gyroscope=(), magnetometer=(), microphone=(), midi=(), payment=(), usb=()';

/**
 * CORS for the origins in cors:origins only; credentials allowed (cookies carry the session). Not the
 * `cors` package: it answers every OPTIONS request itself (204, whatever the origin), and OPTIONS
 * without an allowed Origin must reach the routes (the mobile-sync plugin answers OPTIONS with its
 * protocol versions); what is left is these few headers on an allowed origin.
 */
export function cors(origins: readonly string[]): RequestHandler {
  const allowed = new Set(origins);
  return (req, res, next) => {
    const origin = req.headers.origin;
    if (origin && allowed.has(origin)) {
      res.setHeader('Access-Control-Allow-Origin', origin);
      res.setHeader('Access-Control-Allow-Credentials', 'true');
      res.setHeader('Vary', 'Origin');
      if (req.method === 'OPTIONS') {
        res.setHeader('Access-Control-Allow-Methods', 'GET, HEAD, POST, PUT, DELETE, OPTIONS');
        res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type, X-CSRF-Token, X-Request-Id');
        res.setHeader('Access-Control-Max-Age', '600');
        res.status(204).end();
        return;
      }
    }
    next();
  };
}

function hasNul(v: unknown, depth = 0): boolean {
  if (typeof v === 'string') return v.includes('\0');
  if (v === null || typeof v !== 'object' || depth > 64) return false;
  if (Array.isArray(v)) return v.some((x) => hasNul(x, depth + 1));
  return Object.entries(v).some(([k, x]) => k.includes('\0') || hasNul(x, depth + 1));
}

/**
 * NUL characters in the path, the query or a JSON body are refused with 400 api-106: no name,
 * address or setting needs one, and PostgreSQL cannot store them in text (it would answer 500).
 */
export const rejectNul: RequestHandler = (req, _res, next) => {
  if (/%00/.test(req.url) || hasNul(req.query) || hasNul(req.body)) {
    next(
      new ApiError('api-106', 'NUL characters are not accepted', { details: [{ path: '(request)', message: 'contains a NUL character' }] }),
    );
    return;
  }
  next();
};
