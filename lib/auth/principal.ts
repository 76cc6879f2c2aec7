import type { Config } from '../config/index.js';
import { ApiError } from '../errors/index.js';

import type { Principal } from '../context/index.js';

export type { Principal } from '../context/index.js';

export interface RoleOptions {
  /** Mailbox-scoped checks always strip trusted roles (Spec: Roles and elevation). */
  stripTrusted: boolean;
}

/** The roles that count for this principal: trusted roles only in elevated tokens, never when stripped. */
export function effectiveRoles(p: Principal, config: Config, opts: RoleOptions): string[] {
  const trusted = new Set(config.get('trusted_roles'));
  return p.roles.filter((r) => !trusted.has(r) || (!opts.stripTrusted && p.elevatedAt !== null));
}

export function hasTrustedRole(p: Principal | null, config: Config): boolean {
  if (!p || p.elevatedAt === null) return false;
  const trusted = new Set(config.get('trusted_roles'));
  return p.roles.some((r) => trusted.has(r));
}

export function elevationIsFresh(p: Principal, config: Config, now = Date.now()): boolean {
  if (p.elevatedAt === null) return false;
  const age = now - p.elevatedAt;
  return age >= -60_000 && age <= config.get('mail:security:elevation_max_age_seconds') * 1000;
}

export function requireSignedIn(p: Principal | null | undefined): Principal {
  if (!p) throw new ApiError('api-100');
  return p;
}

/** A trusted role, and for sensitive administration an elevation no older than the maximum age. */
export function requireTrusted(p: Principal | null | undefined, config: Config, opts: { fresh: boolean }): Principal {
  const who = requireSignedIn(p);
  const trusted = new Set(config.get('trusted_roles'));
  if (!who.roles.some((r) => trusted.has(r))) throw new ApiError('api-103');
  if (who.elevatedAt === null) throw new ApiError('api-104', 'Elevation required: confirm your identity at /auth/elevate');
  if (opts.fresh && !elevationIsFresh(who, config)) throw new ApiError('api-104');
  return who;
}
