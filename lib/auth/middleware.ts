import { timingSafeEqual } from 'node:crypto';
import type { Request, RequestHandler } from 'express';
import { parse as parseCookies } from 'cookie';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import type { Principal } from './principal.js';
import { TokenVerifier } from './verify.js';

const QUERY_TOKEN_PARAMS = ['access_token', 'token', 'jwt', 'id_token'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

export function cookiesOf(req: Request): Record<string, string | undefined> {
  return req.headers.cookie ? parseCookies(req.headers.cookie) : {};
}

function sameSecret(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

/** Development auto-login (Spec: Development): from sources, NODE_ENV dev/development/test, never in a build. */
export function devAutoLoginActive(config: Config): boolean {
  return config.fromSources && config.isDevelopment && config.get('mail:dev_auto_login:enabled');
}

export function devPrincipal(config: Config): Principal {
  const now = Date.now();
  return {
    uid: config.get('mail:dev_auto_login:uid'),
    roles: config.get('mail:dev_auto_login:roles'),
    elevatedAt: now,
    expiresAt: now + 3600_000,
    via: 'dev',
  };
}

/** The secret the verifier uses; in development without one, a random per-process secret (no token can match). */
export function tokenSecret(config: Config): string {
  return config.get('auth:secret') ?? (config.isDevelopment ? `dev-${process.pid}-${Math.random().toString(36).slice(2)}-unusable` : '');
}

/**
 * Puts the verified Principal (or null) on req.principal. A presented but invalid token fails at
 * once; a missing token is left to the route (public routes exist). Cookie writes need CSRF.
 */
export function authenticate(config: Config): RequestHandler {
  const verifier = new TokenVerifier(config, tokenSecret(config));
  const autoLogin = devAutoLoginActive(config);
  return async (req, _res, next) => {
    try {
      // Signed in by basicAuth (an app password on a Basic path, mounted before this).
      if (req.principal?.via === 'basic') return next();
      req.principal = null;
      if (QUERY_TOKEN_PARAMS.some((p) => p in (req.query as object))) {
        throw new ApiError('api-100', 'Tokens in the query string are not accepted; send Authorization: Bearer or the jwt cookie');
      }
      const header = req.headers.authorization;
      if (header && /^bearer\s+/i.test(header)) {
        req.principal = await verifier.verify(header.replace(/^bearer\s+/i, '').trim(), 'bearer');
      } else {
        const cookies = cookiesOf(req);
        if (cookies.jwt) {
          req.principal = await verifier.verify(cookies.jwt, 'cookie');
          if (!SAFE_METHODS.has(req.method)) {
            const sent = req.headers['x-csrf-token'];
            if (!cookies.csrf || typeof sent !== 'string' || !sameSecret(cookies.csrf, sent)) throw new ApiError('api-105');
          }
        } else if (header && /^basic(\s|$)/i.test(header)) {
          // Spec: no path but mail:basic_auth:paths accepts Basic, and there only through basicAuth.
          throw new ApiError('api-100', 'Sign-in required: HTTP Basic is not accepted here');
        } else if (autoLogin && !header) {
          req.principal = devPrincipal(config);
        }
      }
      next();
    } catch (e) {
      next(e);
    }
  };
}
