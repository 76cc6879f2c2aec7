import { z } from 'zod';
import { ApiError, denied, invalid, notFound } from '../errors/index.js';
import { type Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { approvalsOf, approve, escrowAudit, scopeForHolder, validApprovals } from './access.js';
import { EscrowScopeModel, ScopeChangeModel, type Scope, type ScopeChange } from './models.js';
import { checkScopeShape } from './resources.js';

// Changes to a scope's holders or M (Spec: Escrow records — M holder approvals per access): one
// holder must not be able to make himself the only holder with M=1. A change is a request like an
// access request: the holders approve it, the requester's own approval counts, and it applies once
// M valid approvals exist under the scope's *current* holders and M. Approvals reuse the access
// requests' approval records and TTL.

export const changeInput = z
  .object({
    holders: z.array(z.string().trim().min(1).max(200)).min(1).max(50).optional().describe('the new holder list (principal uids)'),
    approvalsRequired: z
      .number()
      .int()
      .min(1)
      .max(50)
      .optional()
      .describe('the new M (at least mail:escrow:min_approvals, at most the holders)'),
    reason: z.string().trim().min(1).max(2000),
  })
  .strict();

const sameList = (a: string[], b: string[]) => a.length === b.length && a.every((x, i) => x === b[i]);
const stillBased = (scope: Scope, c: ScopeChange) =>
  sameList(scope.holders, c.baseHolders) && scope.approvalsRequired === c.baseApprovalsRequired;

export interface ChangeView extends Row<ScopeChange> {
  approvals: Array<{ holder: string; approvedAt: Date; valid: boolean }>;
}

async function viewOf(ctx: Ctx, scope: Scope, c: Row<ScopeChange>): Promise<ChangeView> {
  const all = await approvalsOf(ctx.store, c.uid);
  const valid = new Set(validApprovals(all, scope, ctx.config.get('mail:escrow:approval_ttl_hours')).map((a) => a.holder));
  return { ...c, approvals: all.map((a) => ({ holder: a.holder, approvedAt: a.approvedAt, valid: valid.has(a.holder) })) };
}

/** Inside a transaction: supersede or apply the change when its approvals reach M. */
async function settle(ctx: Ctx, change: Row<ScopeChange>): Promise<Row<ScopeChange>> {
  const changes = ctx.store.repo<ScopeChange>(ScopeChangeModel);
  const scope = (await ctx.store.repo<Scope>(EscrowScopeModel).get(change.scopeUid))!;
  if (!stillBased(scope, change)) {
    await escrowAudit(ctx, 'scope.change.supersede', scope.uid, { uid: change.uid });
    return changes.update(change.uid, { state: 'superseded' });
  }
  const valid = validApprovals(await approvalsOf(ctx.store, change.uid), scope, ctx.config.get('mail:escrow:approval_ttl_hours'));
  if (valid.length < scope.approvalsRequired) return change;
  const next = { holders: change.holders ?? scope.holders, approvalsRequired: change.approvalsRequired ?? scope.approvalsRequired };
  checkScopeShape(ctx.config, next);
  await ctx.store.repo<Scope>(EscrowScopeModel).update(scope.uid, next, { expectedVersion: scope.version });
  const applied = await changes.update(change.uid, { state: 'applied' });
  await escrowAudit(ctx, 'scope.change.apply', scope.uid, {
    uid: change.uid,
    holdersBefore: scope.holders,
    holders: next.holders,
    approvalsRequiredBefore: scope.approvalsRequired,
    approvalsRequired: next.approvalsRequired,
    approvers: valid.map((a) => a.holder),
  });
  // Other proposals were made against the old holders and M.
  const others = await changes.list({ filter: { scopeUid: scope.uid, state: 'pending', uid: { $ne: change.uid } }, limit: 1000 });
  for (const o of others) {
    await changes.update(o.uid, { state: 'superseded' });
    await escrowAudit(ctx, 'scope.change.supersede', scope.uid, { uid: o.uid });
  }
  return applied;
}

export async function proposeChange(ctx: Ctx, scopeUid: string, input: z.output<typeof changeInput>): Promise<ChangeView> {
  const scope = await scopeForHolder(ctx, scopeUid, 'scope.change.request');
  const next = { holders: input.holders ?? scope.holders, approvalsRequired: input.approvalsRequired ?? scope.approvalsRequired };
  if (sameList(next.holders, scope.holders) && next.approvalsRequired === scope.approvalsRequired) {
    throw invalid('the change changes nothing: give new holders or approvalsRequired', [{ path: '(body)', message: 'no change' }]);
  }
  checkScopeShape(ctx.config, next);
  const change = await ctx.store.transaction(async (tx) => {
    const txCtx = { ...ctx, store: tx };
    const created = await tx.repo<ScopeChange>(ScopeChangeModel).create({
      scopeUid,
      requester: ctx.principal.uid,
      reason: input.reason,
      holders: input.holders ?? null,
      approvalsRequired: input.approvalsRequired ?? null,
      baseHolders: scope.holders,
      baseApprovalsRequired: scope.approvalsRequired,
      state: 'pending',
    });
    await escrowAudit(txCtx, 'scope.change.request', scopeUid, {
      uid: created.uid,
      holders: input.holders ?? null,
      approvalsRequired: input.approvalsRequired ?? null,
      reason: input.reason,
    });
    await approve(tx, created.uid, ctx.principal.uid);
    await escrowAudit(txCtx, 'scope.change.approve', scopeUid, { uid: created.uid, holder: ctx.principal.uid });
    return settle(txCtx, created);
  });
  return viewOf(ctx, (await ctx.store.repo<Scope>(EscrowScopeModel).get(scopeUid))!, change);
}

async function loadChange(ctx: Ctx, scopeUid: string, changeUid: string, attempted: string) {
  const scope = await scopeForHolder(ctx, scopeUid, attempted, { changeUid });
  const change = await ctx.store.repo<ScopeChange>(ScopeChangeModel).get(changeUid);
  if (!change || change.scopeUid !== scope.uid) throw notFound();
  return { scope, change };
}

export async function approveChange(ctx: Ctx, scopeUid: string, changeUid: string): Promise<ChangeView> {
  const { change } = await loadChange(ctx, scopeUid, changeUid, 'scope.change.approve');
  if (change.state !== 'pending') throw new ApiError('api-120', `the change is ${change.state}`);
  const after = await ctx.store.transaction(async (tx) => {
    const txCtx = { ...ctx, store: tx };
    const scope = (await tx.repo<Scope>(EscrowScopeModel).get(scopeUid))!;
    // A stale proposal is superseded before anyone's approval is added to it.
    if (!stillBased(scope, change)) return settle(txCtx, change);
    await approve(tx, change.uid, ctx.principal.uid);
    await escrowAudit(txCtx, 'scope.change.approve', scopeUid, { uid: change.uid, holder: ctx.principal.uid });
    return settle(txCtx, change);
  });
  if (after.state === 'superseded')
    throw new ApiError('api-120', 'the change is superseded: the holders or M changed since it was proposed');
  return viewOf(ctx, (await ctx.store.repo<Scope>(EscrowScopeModel).get(scopeUid))!, after);
}

export async function withdrawChange(ctx: Ctx, scopeUid: string, changeUid: string): Promise<ChangeView> {
  const { scope, change } = await loadChange(ctx, scopeUid, changeUid, 'scope.change.withdraw');
  if (change.requester !== ctx.principal.uid) throw denied('only the requester withdraws a change');
  if (change.state !== 'pending') throw new ApiError('api-120', `the change is ${change.state}`);
  const after = await ctx.store.transaction(async (tx) => {
    const c = await tx.repo<ScopeChange>(ScopeChangeModel).update(change.uid, { state: 'withdrawn' }, { expectedVersion: change.version });
    await escrowAudit({ ...ctx, store: tx }, 'scope.change.withdraw', scopeUid, { uid: change.uid });
    return c;
  });
  return viewOf(ctx, scope, after);
}

export async function listChanges(ctx: Ctx, scopeUid: string): Promise<ChangeView[]> {
  const scope = await scopeForHolder(ctx, scopeUid);
  const rows = await ctx.store
    .repo<ScopeChange>(ScopeChangeModel)
    .list({ filter: { scopeUid }, sort: [{ field: 'createdAt', dir: 'desc' }], limit: 1000 });
  return Promise.all(rows.map((c) => viewOf(ctx, scope, c)));
}
