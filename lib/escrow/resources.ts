import { X509Certificate } from '@peculiar/x509';
import { ADMIN_ONLY } from '../settings/index.js';
import type { Config } from '../config/index.js';
import { ApiError, invalid, notFound } from '../errors/index.js';
import { KeyVaultModel } from '../keys/index.js';
import { defineResource, OPERATIONS } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { escrowAudit, heldScopeUids, scopeForHolder } from './access.js';
import {
  AccessRequestModel,
  ApprovalModel,
  EscrowScopeModel,
  MatterExportModel,
  MatterModel,
  STATES,
  type Approval,
  type Matter,
  type Scope,
} from './models.js';

/** Spec: All escrow routes need a trusted role with fresh elevation. */
const ALL_SENSITIVE = OPERATIONS;

const HOLDERS_ONLY =
  'Holders only: a record bound to a scope the caller does not hold answers 404 exactly like a missing one, and lists show only the scopes the caller holds.';

const byHeldScope = async (ctx: Ctx) => ({ scopeUid: await heldScopeUids(ctx) });

/** Holders distinct, mail:escrow:min_approvals <= M <= holders, a valid P-256 certificate. */
export function checkScopeShape(config: Config, s: Partial<Scope>): void {
  const holders = s.holders ?? [];
  const m = s.approvalsRequired ?? 1;
  if (new Set(holders).size !== holders.length)
    throw invalid('holders must be distinct', [{ path: 'holders', message: 'duplicate holder' }]);
  if (m > holders.length)
    throw invalid('approvalsRequired cannot exceed the number of holders', [{ path: 'approvalsRequired', message: 'more than holders' }]);
  const floor = config.get('mail:escrow:min_approvals');
  if (m < floor)
    throw invalid(`approvalsRequired must be at least ${floor} (mail:escrow:min_approvals)`, [
      { path: 'approvalsRequired', message: `below ${floor}` },
    ]);
  if (s.certificatePem !== undefined) {
    let cert: X509Certificate;
    try {
      cert = new X509Certificate(s.certificatePem);
    } catch {
      throw invalid('certificatePem is not a PEM X.509 certificate', [{ path: 'certificatePem', message: 'not a certificate' }]);
    }
    const alg = cert.publicKey.algorithm as { name?: string; namedCurve?: string };
    if ((alg.name !== 'ECDSA' && alg.name !== 'ECDH') || alg.namedCurve !== 'P-256')
      throw invalid('the scope certificate must hold a P-256 key', [{ path: 'certificatePem', message: 'not P-256' }]);
    if (cert.notAfter.getTime() < Date.now())
      throw invalid('the scope certificate has expired', [{ path: 'certificatePem', message: 'expired' }]);
  }
}

export const scopesResource = defineResource({
  group: 'escrow',
  name: 'scopes',
  entity: 'escrowScope',
  summary: 'Escrow scopes: a certificate (the private key stays with the holders), the holders, and M approvals required per access',
  accessNote: `${HOLDERS_ONLY} Creating: any elevated admin, who must be one of the holders; M is at least mail:escrow:min_approvals. The certificate is fixed at creation (rotate by a new scope). holders and approvalsRequired change only through POST /api/escrow/scopes/:id/changes with M approvals; PUT changes the name only. Deleting: a holder, once no mailbox is assigned and no matter names the scope. Every change is in the escrow audit log.`,
  model: EscrowScopeModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  sensitive: ALL_SENSITIVE,
  operations: ['list', 'head', 'get', 'create', 'update', 'updateProperty', 'delete'],
  immutableFields: ['certificatePem', 'holders', 'approvalsRequired'],
  visibleTo: async (ctx) => ({ uid: await heldScopeUids(ctx) }),
  hooks: {
    beforeCreate(ctx, data) {
      const s = data as Partial<Scope>;
      checkScopeShape(ctx.config, s);
      // Whoever creates a scope is accountable for it and must be able to see it.
      if (!s.holders?.includes(ctx.principal.uid))
        throw invalid('the creator of a scope must be one of its holders', [{ path: 'holders', message: 'must include the caller' }]);
      return data;
    },
    async afterCreate(ctx, rec) {
      await escrowAudit(ctx, 'scope.create', rec.uid, { holders: rec.holders, approvalsRequired: rec.approvalsRequired, name: rec.name });
    },
    async afterUpdate(ctx, before, after) {
      await escrowAudit(ctx, 'scope.update', after.uid, { nameBefore: before.name, name: after.name });
    },
    async beforeDelete(ctx, rec) {
      if (await ctx.store.repo(KeyVaultModel).count({ escrowScopeUid: rec.uid }))
        throw new ApiError('api-120', 'mailboxes are still assigned to this scope');
      // Matters stay for the record, and with them the scope they name.
      if (await ctx.store.repo(MatterModel).count({ scopeUid: rec.uid })) throw new ApiError('api-120', 'matters name this scope');
      await escrowAudit(ctx, 'scope.delete', rec.uid, { name: rec.name });
    },
  },
});

async function checkCustodians(ctx: Ctx, m: Pick<Matter, 'scopeUid' | 'custodians' | 'from' | 'to'>): Promise<void> {
  if (new Date(m.from).getTime() > new Date(m.to).getTime())
    throw invalid('to must not be before from', [{ path: 'to', message: 'before from' }]);
  if (new Set(m.custodians).size !== m.custodians.length)
    throw invalid('custodians must be distinct', [{ path: 'custodians', message: 'duplicate custodian' }]);
  const assigned = await ctx.store
    .repo<{ mailboxUid: string }>(KeyVaultModel)
    .list({ filter: { mailboxUid: { $in: m.custodians }, escrowScopeUid: m.scopeUid }, limit: m.custodians.length });
  const missing = m.custodians.filter((c) => !assigned.some((v) => v.mailboxUid === c));
  if (missing.length)
    throw invalid(`custodians not assigned to the scope: ${missing.join(', ')}`, [
      { path: 'custodians', message: 'not assigned to the scope' },
    ]);
}

export const mattersResource = defineResource({
  group: 'escrow',
  name: 'matters',
  entity: 'escrowMatter',
  summary: `Investigations: custodian mailboxes (assigned to the scope) and a date range. States: ${STATES.matter}`,
  accessNote: `${HOLDERS_ONLY} Creating needs a holder of scopeUid (another scope answers 404). scopeUid, custodians, from and to are fixed at creation, so approvals given for a matter always cover what it names (open a new matter to widen it); name and description change while open.`,
  model: MatterModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  sensitive: ALL_SENSITIVE,
  serverFields: ['state'],
  immutableFields: ['scopeUid', 'custodians', 'from', 'to'],
  operations: ['list', 'head', 'get', 'create', 'update', 'updateProperty'],
  visibleTo: byHeldScope,
  hooks: {
    async beforeCreate(ctx, data) {
      await scopeForHolder(ctx, String(data.scopeUid));
      await checkCustodians(ctx, data as unknown as Matter);
      return { ...data, state: 'open' };
    },
    async afterCreate(ctx, rec) {
      await escrowAudit(ctx, 'matter.create', rec.scopeUid as string, {
        uid: rec.uid,
        name: rec.name,
        custodians: rec.custodians,
        from: rec.from,
        to: rec.to,
      });
    },
    beforeUpdate(_ctx, rec, patch) {
      if (rec.state === 'closed') throw new ApiError('api-120', 'a closed matter cannot change');
      return patch;
    },
    async afterUpdate(ctx, _before, after) {
      await escrowAudit(ctx, 'matter.update', after.scopeUid as string, { uid: after.uid, name: after.name });
    },
  },
});

export const accessRequestsResource = defineResource({
  group: 'escrow',
  name: 'access-requests',
  entity: 'escrowAccessRequest',
  summary: `Requests for a matter's escrow material: M holder approvals (the requester's own counts) before GET …/material releases it. States: ${STATES.accessRequest}`,
  accessNote: `${HOLDERS_ONLY} Creating needs a holder of the matter's scope and an open matter (409 api-120 when closed); approving (POST …/approve) a holder; withdrawing (POST …/withdraw) the requester.`,
  model: AccessRequestModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  sensitive: ALL_SENSITIVE,
  serverFields: ['requester', 'state', 'scopeUid'],
  operations: ['list', 'head', 'get', 'create'],
  visibleTo: byHeldScope,
  hooks: {
    async beforeCreate(ctx, data) {
      const matter = await ctx.store.repo<Matter>(MatterModel).get(String(data.matterUid));
      if (!matter) throw notFound();
      const scope = await scopeForHolder(ctx, matter.scopeUid);
      if (matter.state !== 'open') throw new ApiError('api-120', 'the matter is closed');
      // Spec: Key escrow access 1 — the requester's own approval counts (recorded in afterCreate).
      return { ...data, requester: ctx.principal.uid, scopeUid: scope.uid, state: scope.approvalsRequired <= 1 ? 'approved' : 'pending' };
    },
    async afterCreate(ctx, rec) {
      await escrowAudit(ctx, 'request.create', rec.scopeUid as string, { uid: rec.uid, matterUid: rec.matterUid, reason: rec.reason });
      await ctx.store.repo<Approval>(ApprovalModel).create({ requestUid: rec.uid, holder: ctx.principal.uid, approvedAt: new Date() });
      await escrowAudit(ctx, 'request.approve', rec.scopeUid as string, { uid: rec.uid, holder: ctx.principal.uid });
    },
  },
});

export const matterExportsResource = defineResource({
  group: 'escrow',
  name: 'matter-export-requests',
  entity: 'escrowMatterExport',
  summary: `Exports of a matter's custodians' messages within its date range: messages.mbox (mboxrd, the raw messages: encrypted content stays ciphertext) and manifest.json (metadata, offsets, SHA-256). States: ${STATES.matterExport}`,
  accessNote: `${HOLDERS_ONLY} Creating (POST) names an access request that passes the release checks of …/material (open matter, M valid approvals); downloading re-checks them on every read.`,
  model: MatterExportModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  sensitive: ALL_SENSITIVE,
  hiddenFields: ['lastError'],
  operations: ['list', 'head', 'get'],
  visibleTo: byHeldScope,
});

export const ESCROW_RESOURCES = [scopesResource, mattersResource, accessRequestsResource, matterExportsResource];
