import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import type { Principal } from './principal.js';

interface SessionClaims extends JWTPayload {
  profile?: { uid?: unknown; roles?: unknown };
  elevated?: unknown;
}

/**
 * `elevated` is the time of the identity confirmation (Spec: Session token): a number of seconds (or
 * milliseconds) since the epoch, not in the future beyond the clock tolerance. Absent, null or false:
 * not elevated. Anything else refuses the token, so garbage never counts as an elevation.
 */
function elevationTime(v: unknown, nowMs: number, toleranceMs: number): number | null {
  if (v === undefined || v === null || v === false) return null;
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0)
    throw new ApiError('api-101', 'Token not accepted: the elevated claim must be the time of the confirmation (seconds since the epoch)');
  const ms = v < 1e12 ? v * 1000 : v;
  if (ms > nowMs + toleranceMs) throw new ApiError('api-101', 'Token not accepted: the elevated claim lies in the future');
  return ms;
}

/** iat present, not in the future, and exp − iat within auth:options:max_token_age_seconds (both with the tolerance). */
function checkIssuedAt(payload: JWTPayload, config: Config, nowS: number): void {
  const tolerance = config.get('auth:options:clock_tolerance_seconds');
  const maxAge = config.get('auth:options:max_token_age_seconds');
  const { iat, exp } = payload;
  if (typeof iat !== 'number' || !Number.isFinite(iat)) throw new ApiError('api-101', 'Token not accepted: iat (issued at) is required');
  if (iat > nowS + tolerance)
    throw new ApiError('api-101', 'Token not accepted: issued in the future (check the clocks of the sign-in service and this server)');
  if (exp! - iat > maxAge + tolerance)
    throw new ApiError('api-101', `Token not accepted: its lifetime exceeds ${maxAge} s (auth:options:max_token_age_seconds)`);
}

function signingAlgorithm(token: string): string {
  try {
    const alg = decodeProtectedHeader(token).alg;
    return typeof alg === 'string' ? alg : '';
  } catch {
    return '';
  }
}

/** Verifies an HS256 session token against auth:secret, audience and issuer (Spec: Session token). */
const CACHE_MAX = 10_000;

export class TokenVerifier {
  readonly #key: Uint8Array;
  /**
   * Verified tokens until they expire. An issued access token stays valid until it expires (Spec:
   * Token lifecycle), so a cache hit is the same verdict the signature check would give again.
   */
  readonly #cache = new Map<string, Omit<Principal, 'via'>>();
  constructor(
    private readonly config: Config,
    secret: string,
  ) {
    this.#key = new TextEncoder().encode(secret);
  }

  async verify(token: string, via: Principal['via']): Promise<Principal> {
    const hit = this.#cache.get(token);
    if (hit) {
      if (hit.expiresAt > Date.now()) return { ...hit, via };
      this.#cache.delete(token);
    }
    const p = await this.#verify(token);
    if (this.#cache.size >= CACHE_MAX) this.#cache.delete(this.#cache.keys().next().value!);
    this.#cache.set(token, p);
    return { ...p, via };
  }

  async #verify(token: string): Promise<Omit<Principal, 'via'>> {
    // Spec: Session token — OAuth access tokens (RS256 and the like, own issuer, no roles) are another
    // kind of token, not a wrong one: the caller must exchange it at /oauth/session-token and sign in.
    if (/^(RS|PS|ES)\d+$|^EdDSA$/.test(signingAlgorithm(token))) {
      throw new ApiError(
        'api-100',
        'Sign-in required: OAuth access tokens are not accepted; exchange it for a session token at the sign-in service (/oauth/session-token)',
      );
    }
    let payload: SessionClaims;
    try {
      ({ payload } = await jwtVerify<SessionClaims>(token, this.#key, {
        algorithms: ['HS256'],
        audience: this.config.get('auth:options:audience'),
        issuer: this.config.get('auth:options:issuer'),
        requiredClaims: ['exp'],
      }));
    } catch (e) {
      if (e instanceof joseErrors.JWTExpired) throw new ApiError('api-100', 'Sign-in required: the token has expired');
      throw new ApiError('api-101');
    }
    const now = Date.now();
    checkIssuedAt(payload, this.config, Math.floor(now / 1000));
    const uid = payload.profile?.uid;
    const roles = payload.profile?.roles ?? [];
    if (typeof uid !== 'string' || !uid || !Array.isArray(roles) || !roles.every((r) => typeof r === 'string')) {
      throw new ApiError('api-101', 'Token not accepted: profile.uid and profile.roles are required');
    }
    return {
      uid,
      roles: roles as string[],
      elevatedAt: elevationTime(payload.elevated, now, this.config.get('auth:options:clock_tolerance_seconds') * 1000),
      expiresAt: payload.exp! * 1000,
    };
  }
}
