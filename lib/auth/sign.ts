import { SignJWT } from 'jose';
import type { Config } from '../config/index.js';

export interface SignOptions {
  uid: string;
  roles?: string[];
  elevated?: boolean | Date;
  /** Lifetime in seconds (default one hour, the access-token lifetime). */
  ttlSeconds?: number;
  secret?: string;
  audience?: string;
  issuer?: string;
}

/**
 * Mints a session token exactly as the sign-in service does (HS256, profile, elevated). Used by
 * `svcmail token` and `svcmail admin` on the appliance itself, and by the tests' sign-in double.
 */
export async function signToken(config: Config, opts: SignOptions): Promise<string> {
  const secret = opts.secret ?? config.get('auth:secret');
  if (!secret) throw new Error('auth:secret is not set; run svcmail setup or set it in the configuration');
  const claims: Record<string, unknown> = { profile: { uid: opts.uid, roles: opts.roles ?? [] } };
  if (opts.elevated) claims.elevated = Math.floor((opts.elevated instanceof Date ? opts.elevated.getTime() : Date.now()) / 1000);
  return new SignJWT(claims)
    .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
    .setIssuedAt()
    .setAudience(opts.audience ?? config.get('auth:options:audience'))
    .setIssuer(opts.issuer ?? config.get('auth:options:issuer'))
    .setSubject(opts.uid)
    .setExpirationTime(Math.floor(Date.now() / 1000) + (opts.ttlSeconds ?? 3600))
    .sign(new TextEncoder().encode(secret));
}
