import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, denied, parseOrThrow } from '../errors/index.js';
import { KeyVaultModel } from '../keys/index.js';
import { MessageModel } from '../mail/index.js';
import { approvalsOf, approve, checkRelease, escrowAudit, matterForHolder, requestForHolder, validApprovals } from './access.js';
import { removeExportFiles } from './export-archive.js';
import type { AddRoute } from './http.js';
import {
  AccessRequestModel,
  MatterExportModel,
  MatterModel,
  STATES,
  type AccessRequest,
  type Matter,
  type MatterExport,
} from './models.js';

type Vault = {
  mailboxUid: string;
  escrowScopeUid?: string | null;
  masterKeyGeneration: number;
  wraps: Array<Record<string, unknown>>;
  sealedEncryptionKey?: unknown;
  sealedSigningKey?: unknown;
  encryptionCertificate?: unknown;
};

const HOLDERS = "Holders of the matter's scope only (anyone else: 404, and the attempt is audited as access.denied).";

/** Approvals, withdrawal, material release, closing a matter, matter search. */
export function requestRoutes(route: AddRoute): void {
  const id = (req: Request) => String(req.params.id);

  route(
    'post',
    '/api/escrow/access-requests/:id/approve',
    async (ctx, req, res) => {
      const { request, matter, scope } = await requestForHolder(ctx, id(req), 'request.approve');
      if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
      if (request.state !== 'pending' && request.state !== 'approved') throw new ApiError('api-120', `the request is ${request.state}`);
      const state = await ctx.store.transaction(async (tx) => {
        await approve(tx, request.uid, ctx.principal.uid); // approving again renews an approval that aged
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
      res.json({ uid: request.uid, state });
    },
    {
      summary: "Approve an access request as a holder of the matter's scope (approving again renews an aged approval)",
      description: `${HOLDERS} States: ${STATES.accessRequest}`,
      response: { type: 'object', properties: { uid: { type: 'string' }, state: { enum: ['pending', 'approved'] } } },
      errors: { 409: 'api-120: the matter is closed or the request withdrawn or closed' },
    },
  );

  route(
    'post',
    '/api/escrow/access-requests/:id/withdraw',
    async (ctx, req, res) => {
      const { request, scope } = await requestForHolder(ctx, id(req), 'request.withdraw');
      if (request.requester !== ctx.principal.uid) throw denied('only the requester withdraws a request');
      if (request.state !== 'pending' && request.state !== 'approved') throw new ApiError('api-120', `the request is ${request.state}`);
      await ctx.store.transaction(async (tx) => {
        await tx.repo<AccessRequest>(AccessRequestModel).update(request.uid, { state: 'withdrawn' }, { expectedVersion: request.version });
        await escrowAudit({ ...ctx, store: tx }, 'request.withdraw', scope.uid, { uid: request.uid });
      });
      res.json({ uid: request.uid, state: 'withdrawn' });
    },
    {
      summary: 'Withdraw an access request',
      description: `${HOLDERS} Only the requester (another holder: 403 api-102).`,
      response: { type: 'object', properties: { uid: { type: 'string' }, state: { const: 'withdrawn' } } },
      errors: { 409: 'api-120: not pending or approved' },
    },
  );

  route(
    'get',
    '/api/escrow/access-requests/:id/material',
    async (ctx, req, res) => {
      const held = await requestForHolder(ctx, id(req), 'material.read');
      const { request, matter, scope } = held;
      const valid = await checkRelease(ctx, held, 'material');
      const vaults = await ctx.store
        .repo<Vault>(KeyVaultModel)
        .list({ filter: { mailboxUid: { $in: matter.custodians } }, limit: matter.custodians.length });
      const material = matter.custodians.map((mailboxUid) => {
        const v = vaults.find((x) => x.mailboxUid === mailboxUid && x.escrowScopeUid === scope.uid);
        const escrowWrap =
          v?.wraps.find((w) => w.method === 'escrow' && w.scopeUid === scope.uid && w.masterKeyGeneration === v.masterKeyGeneration) ??
          null;
        // Ciphertext only: the wrap (master key encrypted to the scope certificate) and the sealed keys.
        return {
          mailboxUid,
          masterKeyGeneration: v?.masterKeyGeneration ?? null,
          escrowWrap,
          sealedEncryptionKey: escrowWrap ? v!.sealedEncryptionKey : null,
          sealedSigningKey: escrowWrap ? v!.sealedSigningKey : null,
          encryptionCertificate: v?.encryptionCertificate ?? null,
        };
      });
      await escrowAudit(ctx, 'material.release', scope.uid, {
        uid: request.uid,
        matterUid: matter.uid,
        approvers: valid.map((a) => a.holder),
        mailboxes: material.filter((m) => m.escrowWrap).map((m) => m.mailboxUid),
      });
      res.json({ requestUid: request.uid, matterUid: matter.uid, from: matter.from, to: matter.to, material });
    },
    {
      summary: "Escrow wraps and sealed keys of the matter's mailboxes, once M valid approvals exist",
      description: `${HOLDERS} Spec: Key escrow access — every read re-checks that the request is neither withdrawn nor closed, the matter is open (409 api-120), and that M approvals exist by current holders, each younger than mail:escrow:approval_ttl_hours (403 api-102). Releases and refusals are audited.`,
      errors: { 409: 'api-120: the request or the matter is closed' },
    },
  );

  route(
    'post',
    '/api/escrow/matters/:id/close',
    async (ctx, req, res) => {
      const { matter, scope } = await matterForHolder(ctx, id(req), 'matter.close');
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
      res.json(closed);
    },
    {
      summary: 'Close a matter (final)',
      description: `${HOLDERS} ${STATES.matter} Audited (matter.close).`,
      errors: { 409: 'api-120: already closed' },
    },
  );

  route(
    'get',
    '/api/escrow/matter-search',
    async (ctx, req, res) => {
      const q = parseOrThrow(
        z
          .object({
            matterUid: z.string().min(1),
            q: z.string().max(200).optional(),
            limit: z.coerce.number().int().min(1).max(1000).default(100),
            page: z.coerce.number().int().min(0).default(0),
          })
          .strict(),
        req.query,
        'matter-search takes ?matterUid=&q=&limit=&page=',
      );
      const { matter, scope } = await matterForHolder(ctx, q.matterUid, 'matter.search');
      if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
      // Subjects and correspondents are mail data too: one holder alone does not search them, the
      // matter needs an access request with M valid approvals (as for material and exports).
      const ttl = ctx.config.get('mail:escrow:approval_ttl_hours');
      const approved = await ctx.store
        .repo<AccessRequest>(AccessRequestModel)
        .list({ filter: { matterUid: matter.uid, state: 'approved' }, limit: 100 });
      let ok = false;
      for (const r of approved)
        if (!ok) ok = validApprovals(await approvalsOf(ctx.store, r.uid), scope, ttl).length >= scope.approvalsRequired;
      if (!ok) {
        await escrowAudit(ctx, 'matter.search.refused', scope.uid, {
          matterUid: matter.uid,
          reason: 'no access request with M valid approvals',
        });
        throw denied(`matter-search needs an access request of the matter with ${scope.approvalsRequired} valid approvals`);
      }
      const rows = await ctx.store.repo<Record<string, unknown>>(MessageModel).list({
        filter: { mailboxUid: { $in: matter.custodians }, date: { $gte: new Date(matter.from), $lte: new Date(matter.to) } },
        sort: [{ field: 'date', dir: 'desc' }],
        limit: 10_000,
      });
      const needle = q.q?.toLowerCase();
      const hits = rows.filter(
        (m) => !needle || String(m.subject).toLowerCase().includes(needle) || String(m.fromAddress).includes(needle),
      );
      await escrowAudit(ctx, 'matter.search', scope.uid, { matterUid: matter.uid, q: q.q ?? null, hits: hits.length });
      // Metadata only: the content stays ciphertext (or raw) and is read by the holders' client.
      res.json(
        hits.slice(q.page * q.limit, (q.page + 1) * q.limit).map((m) => ({
          uid: m.uid,
          mailboxUid: m.mailboxUid,
          date: m.date,
          subject: m.subject,
          fromAddress: m.fromAddress,
          to: m.to,
          size: m.size,
          smime: m.smime,
        })),
      );
    },
    {
      summary: "Message metadata of the matter's custodians within its date range (no content); audited",
      description: `${HOLDERS} The matter must be open (409 api-120) and have an access request with M valid approvals by current holders, each younger than mail:escrow:approval_ttl_hours (403 api-102 otherwise, audited): metadata is mail data too.`,
      query: [
        { name: 'matterUid', in: 'query', required: true, schema: { type: 'string' } },
        { name: 'q', in: 'query', description: 'subject or sender contains', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer' } },
        { name: 'page', in: 'query', schema: { type: 'integer' } },
      ],
      errors: {
        409: 'api-120: the matter is closed',
        403: 'api-102: no access request with M valid approvals; api-103 / api-104: trusted role and fresh elevation',
      },
    },
  );
}
