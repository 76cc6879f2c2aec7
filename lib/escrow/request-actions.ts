// What the escrow routes of access requests and matters do beyond the generic resource routes:
// approve and withdraw a request, release the escrow material, close a matter, search its message
// metadata. Service functions: request-routes.ts declares the routes that call them.
import { z } from 'zod';
import { ApiError, denied } from '../errors/index.js';
import { KeyVaultModel } from '../keys/index.js';
import { MessageModel, type Message } from '../mail/index.js';
import type { Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { approvalsOf, approve, checkRelease, escrowAudit, matterForHolder, requestForHolder, validApprovals } from './access.js';
import { removeExportFiles } from './export-archive.js';
import { liftDecline } from './decisions.js';
import {
  AccessRequestModel,
  MatterExportModel,
  MatterModel,
  type AccessRequest,
  type Matter,
  type MatterExport,
  type Scope,
} from './models.js';
import { currentEscrowWrap, type Vault } from './vaults.js';

const live = (r: AccessRequest) => r.state === 'pending' || r.state === 'approved';

/** Records (or renews) the caller's approval; the request is approved once M valid approvals exist. */
export async function approveRequest(ctx: Ctx, requestUid: string): Promise<{ uid: string; state: 'pending' | 'approved' }> {
  const { request, matter, scope } = await requestForHolder(ctx, requestUid, 'request.approve');
  if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
  if (!live(request)) throw new ApiError('api-120', `the request is ${request.state}`);
  const state = await ctx.store.transaction(async (tx) => {
    await approve(tx, request.uid, ctx.principal.uid); // approving again renews an approval that aged
    await liftDecline(tx, request.uid, ctx.principal.uid);
    const valid = validApprovals(await approvalsOf(tx, request.uid), scope, ctx.config.get('mail:escrow:approval_ttl_hours'));
    const next = valid.length >= scope.approvalsRequired ? 'approved' : 'pending';
    if (next !== request.state) await tx.repo<AccessRequest>(AccessRequestModel).update(request.uid, { state: next });
    await escrowAudit({ ...ctx, store: tx }, 'request.approve', scope.uid, {
      uid: request.uid,
      holder: ctx.principal.uid,
      valid: valid.length,
      required: scope.approvalsRequired,
    });
    return next;
  });
  return { uid: request.uid, state };
}

/** The requester withdraws a pending or approved request. */
export async function withdrawRequest(ctx: Ctx, requestUid: string): Promise<{ uid: string; state: 'withdrawn' }> {
  const { request, scope } = await requestForHolder(ctx, requestUid, 'request.withdraw');
  if (request.requester !== ctx.principal.uid) throw denied('only the requester withdraws a request');
  if (!live(request)) throw new ApiError('api-120', `the request is ${request.state}`);
  await ctx.store.transaction(async (tx) => {
    await tx.repo<AccessRequest>(AccessRequestModel).update(request.uid, { state: 'withdrawn' }, { expectedVersion: request.version });
    await escrowAudit({ ...ctx, store: tx }, 'request.withdraw', scope.uid, { uid: request.uid });
  });
  return { uid: request.uid, state: 'withdrawn' };
}

/** One custodian's escrow material: ciphertext only (the wrap to the scope certificate and the sealed keys). */
function materialOf(mailboxUid: string, v: Vault | undefined, scopeUid: string) {
  const escrowWrap = (v && currentEscrowWrap(v, scopeUid)) ?? null;
  return {
    mailboxUid,
    masterKeyGeneration: v?.masterKeyGeneration ?? null,
    escrowWrap,
    sealedEncryptionKey: escrowWrap ? v!.sealedEncryptionKey : null,
    sealedSigningKey: escrowWrap ? v!.sealedSigningKey : null,
    encryptionCertificate: v?.encryptionCertificate ?? null,
  };
}

/** The escrow material of the matter's custodians, after the release checks (Spec: Key escrow access); audited. */
export async function releaseMaterial(ctx: Ctx, requestUid: string) {
  const held = await requestForHolder(ctx, requestUid, 'material.read');
  const { request, matter, scope } = held;
  const valid = await checkRelease(ctx, held, 'material');
  const vaults = await ctx.store
    .repo<Vault>(KeyVaultModel)
    .list({ filter: { mailboxUid: { $in: matter.custodians } }, limit: matter.custodians.length });
  const material = matter.custodians.map((mailboxUid) =>
    materialOf(
      mailboxUid,
      vaults.find((x) => x.mailboxUid === mailboxUid && x.escrowScopeUid === scope.uid),
      scope.uid,
    ),
  );
  await escrowAudit(ctx, 'material.release', scope.uid, {
    uid: request.uid,
    matterUid: matter.uid,
    approvers: valid.map((a) => a.holder),
    mailboxes: material.filter((m) => m.escrowWrap).map((m) => m.mailboxUid),
  });
  return { requestUid: request.uid, matterUid: matter.uid, from: matter.from, to: matter.to, material };
}

/** Closes the matter, its live access requests and its exports (whose files are deleted); audited. */
export async function closeMatter(ctx: Ctx, matterUid: string): Promise<Row<Matter>> {
  const { matter, scope } = await matterForHolder(ctx, matterUid, 'matter.close');
  if (matter.state === 'closed') throw new ApiError('api-120', 'the matter is already closed');
  const { closed, expired } = await ctx.store.transaction(async (tx) => {
    const m = await tx.repo<Matter>(MatterModel).update(matter.uid, { state: 'closed' }, { expectedVersion: matter.version });
    const requests = await tx
      .repo<AccessRequest>(AccessRequestModel)
      .updateMany({ matterUid: matter.uid, state: { $in: ['pending', 'approved'] } }, { state: 'closed' });
    const exportRepo = tx.repo<MatterExport>(MatterExportModel);
    const gone = await exportRepo.list({ filter: { matterUid: matter.uid, state: { $in: ['pending', 'ready'] } }, limit: 10_000 });
    await exportRepo.updateMany({ matterUid: matter.uid, state: { $in: ['pending', 'ready'] } }, { state: 'expired' });
    await escrowAudit({ ...ctx, store: tx }, 'matter.close', scope.uid, {
      uid: matter.uid,
      closedRequests: requests,
      expiredExports: gone.map((e) => e.uid),
    });
    return { closed: m, expired: gone.map((e) => e.uid) };
  });
  // After the commit: a file left behind (a failed delete) is dropped by the worker's next sweep.
  await Promise.all(
    expired.map((uid) =>
      removeExportFiles(ctx.config, uid).catch((e: unknown) =>
        ctx.log.warn({ export: uid, err: (e as Error).message }, 'deleting a matter export failed'),
      ),
    ),
  );
  return closed;
}

export const matterSearchQuery = z.object({
  matterUid: z.string().min(1),
  q: z.string().max(200).optional().describe('subject or sender contains'),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  page: z.coerce.number().int().min(0).default(0),
});

/** Whether an approved access request of the matter still has M valid approvals. */
async function hasReleasableRequest(ctx: Ctx, matter: Row<Matter>, scope: Row<Scope>): Promise<boolean> {
  const ttl = ctx.config.get('mail:escrow:approval_ttl_hours');
  const approved = await ctx.store
    .repo<AccessRequest>(AccessRequestModel)
    .list({ filter: { matterUid: matter.uid, state: 'approved' }, limit: 100 });
  for (const r of approved)
    if (validApprovals(await approvalsOf(ctx.store, r.uid), scope, ttl).length >= scope.approvalsRequired) return true;
  return false;
}

/** Message metadata (never content) of the matter's custodians within its date range; audited. */
export async function searchMatter(ctx: Ctx, q: z.output<typeof matterSearchQuery>) {
  const { matter, scope } = await matterForHolder(ctx, q.matterUid, 'matter.search');
  if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
  // Subjects and correspondents are mail data too: one holder alone does not search them, the
  // matter needs an access request with M valid approvals (as for material and exports).
  if (!(await hasReleasableRequest(ctx, matter, scope))) {
    await escrowAudit(ctx, 'matter.search.refused', scope.uid, {
      matterUid: matter.uid,
      reason: 'no access request with M valid approvals',
    });
    throw denied(`matter-search needs an access request of the matter with ${scope.approvalsRequired} valid approvals`);
  }
  const rows = await ctx.store.repo<Message>(MessageModel).list({
    filter: { mailboxUid: { $in: matter.custodians }, date: { $gte: new Date(matter.from), $lte: new Date(matter.to) } },
    sort: [{ field: 'date', dir: 'desc' }],
    limit: 10_000,
  });
  const needle = q.q?.toLowerCase();
  const hits = rows.filter((m) => !needle || String(m.subject).toLowerCase().includes(needle) || String(m.fromAddress).includes(needle));
  await escrowAudit(ctx, 'matter.search', scope.uid, { matterUid: matter.uid, q: q.q ?? null, hits: hits.length });
  // Metadata only: the content stays ciphertext (or raw) and is read by the holders' client.
  return hits.slice(q.page * q.limit, (q.page + 1) * q.limit).map((m) => ({
    uid: m.uid,
    mailboxUid: m.mailboxUid,
    date: m.date,
    subject: m.subject,
    fromAddress: m.fromAddress,
    to: m.to,
    size: m.size,
    smime: m.smime,
  }));
}
