import type { Config } from '../config/index.js';
import { effectiveRoles, type Principal } from '../auth/index.js';
import type { AclGrant, Right } from './model.js';

export * from './model.js';
export { ownersOf } from './queries.js';

/** The subjects a principal speaks for. Mailbox-scoped checks pass stripTrusted (Spec: Roles and elevation). */
export function subjectsOf(p: Principal, config: Config, opts: { stripTrusted: boolean }): string[] {
  return [`user:${p.uid}`, 'authenticated', ...effectiveRoles(p, config, opts).map((r) => `role:${r}`)];
}

/** Owners hold every right. */
export function allows(grants: readonly AclGrant[], subjects: readonly string[], right: Right): boolean {
  const mine = new Set(subjects);
  return grants.some((g) => mine.has(g.subject) && (g.rights.includes(right) || g.rights.includes('owner')));
}

export const ALL_RIGHTS: readonly Right[] = ['owner'];
