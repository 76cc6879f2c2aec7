// Where each holder stands on an access request (Spec: Key escrow access): approvals with their age
// against mail:escrow:approval_ttl_hours, and declines. A holder who declines withdraws their own
// approval (the request may fall back to pending) and says why; approving again lifts the decline.
// Declines do not veto: M approvals by other holders still release the material.
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import type { Store } from '../storage/index.js';
import { approvalsOf, escrowAudit, isHolder, requestForHolder, validApprovals } from './access.js';
import { AccessRequestModel, ApprovalModel, DeclineModel, type AccessRequest, type Decline } from './models.js';

export const declineBody = z.strictObject({ reason: z.string().trim().max(2000).default('') });

/** Lifts the holder's decline (they approve now). */
export async function liftDecline(store: Store, requestUid: string, holder: string): Promise<void> {
  await store.repo<Decline>(DeclineModel).deleteMany({ requestUid, holder });
}

/** The caller declines: their approval withdrawn, the decline recorded with its reason; audited. */
export async function declineRequest(ctx: Ctx, requestUid: string, reason: string) {
  const { request, matter, scope } = await requestForHolder(ctx, requestUid, 'request.decline');
  if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
  if (request.state !== 'pending' && request.state !== 'approved') throw new ApiError('api-120', `the request is ${request.state}`);
  const holder = ctx.principal.uid;
  return ctx.store.transaction(async (tx) => {
    await tx.repo(ApprovalModel).deleteMany({ requestUid, holder });
    const declines = tx.repo<Decline>(DeclineModel);
    const mine = await declines.findOne({ requestUid, holder });
    if (mine) await declines.update(mine.uid, { reason, declinedAt: new Date() });
    else await declines.create({ requestUid, holder, reason, declinedAt: new Date() });
    const valid = validApprovals(await approvalsOf(tx, requestUid), scope, ctx.config.get('mail:escrow:approval_ttl_hours'));
    const state: 'approved' | 'pending' = valid.length >= scope.approvalsRequired ? 'approved' : 'pending';
    if (state !== request.state) await tx.repo<AccessRequest>(AccessRequestModel).update(request.uid, { state });
    await escrowAudit({ ...ctx, store: tx }, 'request.decline', scope.uid, { uid: request.uid, holder, reason });
    return { uid: request.uid, state };
  });
}

/** Each holder's standing on the request: approvals (valid or why not, and until when) and declines. */
export async function decisionsOf(ctx: Ctx, requestUid: string) {
  const { request, scope } = await requestForHolder(ctx, requestUid, 'request.decisions');
  const ttlHours = ctx.config.get('mail:escrow:approval_ttl_hours');
  const now = Date.now();
  const approvals = (await approvalsOf(ctx.store, requestUid)).map((a) => {
    const expiresAt = new Date(new Date(a.approvedAt).getTime() + ttlHours * 3_600_000);
    const counts: 'valid' | 'expired' | 'not-a-holder' = isHolder(scope, a.holder)
      ? expiresAt.getTime() >= now
        ? 'valid'
        : 'expired'
      : 'not-a-holder';
    return { holder: a.holder, approvedAt: a.approvedAt, expiresAt, counts };
  });
  const declines = (await ctx.store.repo<Decline>(DeclineModel).list({ filter: { requestUid }, limit: 100 })).map((d) => ({
    holder: d.holder,
    reason: d.reason,
    declinedAt: d.declinedAt,
  }));
  return {
    uid: request.uid,
    state: request.state,
    holders: scope.holders,
    approvalsRequired: scope.approvalsRequired,
    approvalTtlHours: ttlHours,
    valid: approvals.filter((a) => a.counts === 'valid').length,
    approvals,
    declines,
  };
}
