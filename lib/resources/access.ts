import { AclEntryModel, allows, subjectsOf, type AclEntryRecord, type AclGrant, type Right } from '../acl/index.js';
import { requireTrusted } from '../auth/index.js';
import { ApiError, notFound } from '../errors/index.js';
import type { Store } from '../storage/index.js';
import type { AnyRecord, Operation, ResourceDecl } from './define.js';
import type { Ctx } from '../context/index.js';

/** The uids whose ACL entries a record inherits: itself, its parent, its mailbox. */
export function aclChain(decl: ResourceDecl, rec: AnyRecord): string[] {
  const chain = [rec.uid];
  if (decl.parent) {
    const p = rec[decl.parent.field];
    if (typeof p === 'string') chain.push(p);
  }
  if (decl.mailboxField) {
    const m = rec[decl.mailboxField];
    if (typeof m === 'string') chain.push(m);
  }
  return [...new Set(chain)];
}

export async function grantsFor(store: Store, decl: ResourceDecl, rec: AnyRecord): Promise<AclGrant[]> {
  const entries = await store
    .repo<AclEntryRecord>(AclEntryModel)
    .list({ filter: { resourceUid: { $in: aclChain(decl, rec) } }, limit: 1000 });
  return [...entries, ...decl.defaultAcl];
}

/** Trusted roles are stripped for mailbox-scoped data (Spec: Roles and elevation). */
export function subjectsFor(ctx: Ctx, decl: ResourceDecl): string[] {
  return subjectsOf(ctx.principal, ctx.config, { stripTrusted: decl.scope === 'mailbox' });
}

function classDenial(ctx: Ctx, grants: readonly AclGrant[]): ApiError {
  const trusted = ctx.config.get('trusted_roles');
  const onlyTrusted = grants.length > 0 && grants.every((g) => trusted.some((r) => g.subject === `role:${r}`));
  return new ApiError(onlyTrusted ? 'api-103' : 'api-102');
}

/**
 * Checks `right` on a loaded record. A mailbox-scoped record the caller cannot read is absent
 * (404, exactly like a missing one); readable but not writable is 403 api-102.
 */
export async function checkRecord(ctx: Ctx, decl: ResourceDecl, rec: AnyRecord, right: Right): Promise<void> {
  const grants = await grantsFor(ctx.store, decl, rec);
  const subjects = subjectsFor(ctx, decl);
  if (!allows(grants, subjects, 'read')) {
    if (decl.scope === 'mailbox') throw notFound();
    throw classDenial(ctx, decl.defaultAcl);
  }
  if (right !== 'read' && !allows(grants, subjects, right)) throw new ApiError('api-102');
}

/** A mailbox-scoped resource with no parent whose records are their own mailbox (the mailboxes resource). */
export function isTopLevel(decl: ResourceDecl): boolean {
  return decl.scope === 'mailbox' && !decl.parent && decl.mailboxField === 'uid';
}

/**
 * checkRecord for a top-level mailbox-scoped record known only by uid: its ACL chain is the uid
 * itself, so a missing record and an invisible one both have no entries and both answer 404.
 */
export async function checkTopLevelUid(ctx: Ctx, decl: ResourceDecl, uid: string, right: Right): Promise<void> {
  const entries = await ctx.store.repo<AclEntryRecord>(AclEntryModel).list({ filter: { resourceUid: uid }, limit: 1000 });
  const grants = [...entries, ...decl.defaultAcl];
  const subjects = subjectsFor(ctx, decl);
  if (!allows(grants, subjects, 'read')) throw notFound();
  if (right !== 'read' && !allows(grants, subjects, right)) throw new ApiError('api-102');
}

/**
 * Class-level check: listing a global resource, or creating a record with no parent (a domain, a
 * mailbox). Creating a mailbox is administration, not access to mail, so trusted roles count here.
 */
export function checkClass(ctx: Ctx, grants: readonly AclGrant[], right: Right): void {
  if (!allows(grants, subjectsOf(ctx.principal, ctx.config, { stripTrusted: false }), right)) throw classDenial(ctx, grants);
}

/** Sensitive operations need a trusted role and fresh elevation (api-103 / api-104). */
export function checkSensitive(ctx: Ctx, decl: ResourceDecl, op: Operation): void {
  if (decl.sensitive?.includes(op)) requireTrusted(ctx.principal, ctx.config, { fresh: true });
}

/** Mailboxes the caller can read, with trusted roles stripped. */
export async function readableMailboxes(ctx: Ctx): Promise<string[]> {
  const subjects = subjectsOf(ctx.principal, ctx.config, { stripTrusted: true });
  const entries = await ctx.store
    .repo<AclEntryRecord>(AclEntryModel)
    .list({ filter: { resource: 'mailboxes', subject: { $in: subjects } }, limit: 10_000 });
  return [...new Set(entries.filter((e) => e.rights.includes('read') || e.rights.includes('owner')).map((e) => e.resourceUid))];
}
