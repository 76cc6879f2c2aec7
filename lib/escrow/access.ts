import { ApiError, notFound } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { appendEscrowAudit } from './audit.js';
import {
  AccessRequestModel,
  ApprovalModel,
  EscrowScopeModel,
  MatterModel,
  type AccessRequest,
  type Approval,
  type Matter,
  type Scope,
} from './models.js';

// Who may act on escrow records (Spec: Escrow records, Key escrow access): holders act only on
// scopes they hold. Every escrow route needs a trusted role with fresh elevation; on top of that, a
// record bound to a scope (the scope, its matters, access requests, changes, exports, mailbox
// assignments, audit entries) is seen and used only by the scope's holders. Anyone else gets 404
// exactly as for a missing record, and a refused attempt on an existing record is written to the
// escrow audit log.

export type Held<T> = { scope: Row<Scope> } & T;

/** Escrow audit entry by the caller. */
export const escrowAudit = (ctx: Ctx, action: string, scopeUid: string | null, details: Record<string, unknown> = {}) =>
  appendEscrowAudit(ctx.store, ctx.config, { actor: ctx.principal.uid, action, scopeUid, details });

export const isHolder = (scope: Pick<Scope, 'holders'>, uid: string): boolean => scope.holders.includes(uid);

/** The scopes the caller holds (few records: read whole, holders is a JSON list the store cannot filter). */
export async function heldScopes(ctx: Pick<Ctx, 'store' | 'principal'>): Promise<Row<Scope>[]> {
  const all = await ctx.store.repo<Scope>(EscrowScopeModel).list({ limit: 10_000 });
  return all.filter((s) => isHolder(s, ctx.principal.uid));
}

export async function heldScopeUids(ctx: Pick<Ctx, 'store' | 'principal'>): Promise<string[]> {
  return (await heldScopes(ctx)).map((s) => s.uid);
}

/**
 * The scope, for one of its holders. A non-holder gets 404 like a missing scope; with `attempted`
 * (outside a transaction only, else the entry would roll back with the refusal) the refusal is audited.
 */
export async function scopeForHolder(
  ctx: Ctx,
  scopeUid: string,
  attempted?: string,
  details: Record<string, unknown> = {},
): Promise<Row<Scope>> {
  const scope = await ctx.store.repo<Scope>(EscrowScopeModel).get(scopeUid);
  if (!scope) throw notFound();
  if (!isHolder(scope, ctx.principal.uid)) {
    if (attempted) await escrowAudit(ctx, 'access.denied', scope.uid, { attempted, ...details, reason: 'not a holder of the scope' });
    throw notFound();
  }
  return scope;
}

export async function matterForHolder(ctx: Ctx, matterUid: string, attempted?: string): Promise<Held<{ matter: Row<Matter> }>> {
  const matter = await ctx.store.repo<Matter>(MatterModel).get(matterUid);
  if (!matter) throw notFound();
  return { matter, scope: await scopeForHolder(ctx, matter.scopeUid, attempted, { matterUid }) };
}

export async function requestForHolder(
  ctx: Ctx,
  requestUid: string,
  attempted?: string,
): Promise<Held<{ request: Row<AccessRequest>; matter: Row<Matter> }>> {
  const request = await ctx.store.repo<AccessRequest>(AccessRequestModel).get(requestUid);
  if (!request) throw notFound();
  const { matter, scope } = await matterForHolder(ctx, request.matterUid, attempted);
  return { request, matter, scope };
}

/** The approvals that still count: by a current holder, younger than mail:escrow:approval_ttl_hours. */
export function validApprovals(approvals: Approval[], scope: Pick<Scope, 'holders'>, ttlHours: number, now = Date.now()): Approval[] {
  return approvals.filter((a) => isHolder(scope, a.holder) && now - new Date(a.approvedAt).getTime() <= ttlHours * 3_600_000);
}

export async function approvalsOf(store: Ctx['store'], requestUid: string): Promise<Row<Approval>[]> {
  return store.repo<Approval>(ApprovalModel).list({ filter: { requestUid }, limit: 100 });
}

/** Records (or renews: an approval that aged counts again) the caller's approval. */
export async function approve(store: Ctx['store'], requestUid: string, holder: string): Promise<void> {
  const repo = store.repo<Approval>(ApprovalModel);
  const mine = await repo.findOne({ requestUid, holder });
  if (mine) await repo.update(mine.uid, { approvedAt: new Date() });
  else await repo.create({ requestUid, holder, approvedAt: new Date() });
}

/**
 * Spec: Key escrow access 1-3 — the checks of every release (material and matter exports): the
 * request is live, the matter is open, M approvals by current holders younger than the TTL. A
 * refusal is audited (call outside a transaction) and answers 409 api-120 or 403 api-102.
 */
export async function checkRelease(
  ctx: Ctx,
  h: Held<{ request: Row<AccessRequest>; matter: Row<Matter> }>,
  action: string,
): Promise<Approval[]> {
  const refuse = async (code: 'api-102' | 'api-120', why: string): Promise<never> => {
    await escrowAudit(ctx, `${action}.refused`, h.scope.uid, { requestUid: h.request.uid, reason: why });
    throw new ApiError(code, why);
  };
  if (h.request.state === 'withdrawn' || h.request.state === 'closed') await refuse('api-120', `the request is ${h.request.state}`);
  if (h.matter.state !== 'open') await refuse('api-120', 'the matter is closed');
  const ttl = ctx.config.get('mail:escrow:approval_ttl_hours');
  const valid = validApprovals(await approvalsOf(ctx.store, h.request.uid), h.scope, ttl);
  if (valid.length < h.scope.approvalsRequired) {
    await refuse(
      'api-102',
      `${valid.length} valid approvals of ${h.scope.approvalsRequired} required (approvals expire after ${ttl} h and count only while the approver holds the scope)`,
    );
  }
  return valid;
}
