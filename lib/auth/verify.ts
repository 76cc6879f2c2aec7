import { decodeProtectedHeader, errors as joseErrors, jwtVerify, type JWTPayload } from 'jose';
import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';
import type { Principal } from './principal.js';

interface SessionClaims extends JWTPayload {
  profile?: { uid?: unknown; roles?: unknown };
  elevated?: unknown;
}

/** `elevated` may be seconds, milliseconds or an ISO date; answer milliseconds. */
function elevationTime(v: unknown): number | null {
  if (v === undefined || v === null || v === false) return null;
  if (typeof v === 'number' && Number.isFinite(v)) return v < 1e12 ? v * 1000 : v;
  if (typeof v === 'string') {
    const t = Date.parse(v);
    if (!Number.isNaN(t)) return t;
  }
  throw new ApiError('api-101', 'Token not accepted: malformed elevated claim');
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
  constructor(private readonly config: Config, secret: string) {
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
      throw new ApiError('api-100', 'Sign-in required: OAuth access tokens are not accepted; exchange it for a session token at the sign-in service (/oauth/session-token)');
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
    const uid = payload.profile?.uid;
    const roles = payload.profile?.roles ?? [];
    if (typeof uid !== 'string' || !uid || !Array.isArray(roles) || !roles.every((r) => typeof r === 'string')) {
      throw new ApiError('api-101', 'Token not accepted: profile.uid and profile.roles are required');
    }
    return { uid, roles: roles as string[], elevatedAt: elevationTime(payload.elevated), expiresAt: payload.exp! * 1000 };
  }
}
