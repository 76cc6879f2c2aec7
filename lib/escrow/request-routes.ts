import type { Router } from 'express';
import { z } from 'zod';
import { isoDate, defineRoute, type OpenApiRegistry } from '../http/index.js';
import { messageFields } from '../mail/index.js';
import { schemasOf } from '../resources/index.js';
import type { Deps } from '../context/index.js';
import { escrowErrors } from './http.js';
import { STATES } from './models.js';
import { approveRequest, closeMatter, matterSearchQuery, releaseMaterial, searchMatter, withdrawRequest } from './request-actions.js';
import { mattersResource } from './resources.js';
import { declineBody, declineRequest, decisionsOf } from './decisions.js';

const decisions = z.object({
  uid: z.string(),
  state: z.enum(['pending', 'approved', 'withdrawn', 'closed']),
  holders: z.array(z.string()),
  approvalsRequired: z.number().int(),
  approvalTtlHours: z.number(),
  valid: z.number().int().describe('approvals that count now'),
  approvals: z.array(
    z.object({
      holder: z.string(),
      approvedAt: isoDate,
      expiresAt: isoDate.describe('approvedAt + mail:escrow:approval_ttl_hours: approve again to renew'),
      counts: z.enum(['valid', 'expired', 'not-a-holder']),
    }),
  ),
  declines: z.array(z.object({ holder: z.string(), reason: z.string(), declinedAt: isoDate })),
});

const HOLDERS = "Holders of the matter's scope only (anyone else: 404, and the attempt is audited as access.denied).";

const sealedKey = z.object({ iv: z.string(), ciphertext: z.string() });

const material = z.object({
  requestUid: z.string(),
  matterUid: z.string(),
  from: isoDate,
  to: isoDate,
  material: z.array(
    z.object({
      mailboxUid: z.string(),
      masterKeyGeneration: z.number().int().nullable(),
      escrowWrap: z.record(z.string(), z.unknown()).nullable().describe('the master key in CMS EnvelopedData to the scope certificate'),
      sealedEncryptionKey: sealedKey.nullish(),
      sealedSigningKey: sealedKey.nullish(),
      encryptionCertificate: z.string().nullable(),
    }),
  ),
});

const searchHit = z.object({
  uid: z.string(),
  mailboxUid: z.string(),
  date: isoDate,
  subject: z.string(),
  fromAddress: z.string(),
  to: messageFields.to,
  size: z.number().int(),
  smime: messageFields.smime,
});

/** Approvals, withdrawal, material release, closing a matter, matter search. */
export function requestRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const tags = ['escrow'];

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/escrow/access-requests/:id/approve',
    operationId: 'escrow_accessrequests_id_approve_post',
    summary: "Approve an access request as a holder of the matter's scope (approving again renews an aged approval)",
    description: `${HOLDERS} States: ${STATES.accessRequest}`,
    tags,
    auth: 'trusted-fresh',
    response: z.object({ uid: z.string(), state: z.enum(['pending', 'approved']) }),
    errors: escrowErrors({ 409: 'api-120: the matter is closed or the request withdrawn or closed' }),
    handler: (ctx, { params }) => approveRequest(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/escrow/access-requests/:id/decline',
    operationId: 'escrow_accessrequests_id_decline_post',
    summary:
      "Decline an access request as a holder of the matter's scope: the caller's approval is withdrawn and the decline recorded with its reason (audited)",
    description: `${HOLDERS} A decline is no veto: M approvals by other holders still release the material. Approving again lifts it.`,
    tags,
    auth: 'trusted-fresh',
    body: declineBody,
    bodyOptional: true,
    response: z.object({ uid: z.string(), state: z.enum(['pending', 'approved']) }),
    errors: escrowErrors({ 409: 'api-120: the matter is closed or the request withdrawn or closed' }),
    handler: (ctx, { params, body }) => declineRequest(ctx, params.id, body?.reason ?? ''),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/escrow/access-requests/:id/decisions',
    operationId: 'escrow_accessrequests_id_decisions_get',
    summary:
      'Where each holder stands: approvals (counting, expired after mail:escrow:approval_ttl_hours, or by a former holder) and declines, against M',
    description: HOLDERS,
    tags,
    auth: 'trusted-fresh',
    response: decisions,
    errors: escrowErrors(),
    handler: (ctx, { params }) => decisionsOf(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/escrow/access-requests/:id/withdraw',
    operationId: 'escrow_accessrequests_id_withdraw_post',
    summary: 'Withdraw an access request',
    description: `${HOLDERS} Only the requester (another holder: 403 api-102).`,
    tags,
    auth: 'trusted-fresh',
    response: z.object({ uid: z.string(), state: z.literal('withdrawn') }),
    errors: escrowErrors({ 409: 'api-120: not pending or approved' }),
    handler: (ctx, { params }) => withdrawRequest(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/escrow/access-requests/:id/material',
    operationId: 'escrow_accessrequests_id_material_get',
    summary: "Escrow wraps and sealed keys of the matter's mailboxes, once M valid approvals exist",
    description: `${HOLDERS} Spec: Key escrow access — every read re-checks that the request is neither withdrawn nor closed, the matter is open (409 api-120), and that M approvals exist by current holders, each younger than mail:escrow:approval_ttl_hours (403 api-102). Releases and refusals are audited.`,
    tags,
    auth: 'trusted-fresh',
    response: material,
    errors: escrowErrors({ 409: 'api-120: the request or the matter is closed' }),
    handler: (ctx, { params }) => releaseMaterial(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/escrow/matters/:id/close',
    operationId: 'escrow_matters_id_close_post',
    summary: 'Close a matter (final)',
    description: `${HOLDERS} ${STATES.matter} Audited (matter.close).`,
    tags,
    auth: 'trusted-fresh',
    response: schemasOf(mattersResource).record,
    errors: escrowErrors({ 409: 'api-120: already closed' }),
    handler: async (ctx, { params }) => ({ ...(await closeMatter(ctx, params.id)) }),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/escrow/matter-search',
    operationId: 'escrow_mattersearch_get',
    summary: "Message metadata of the matter's custodians within its date range (no content); audited",
    description: `${HOLDERS} The matter must be open (409 api-120) and have an access request with M valid approvals by current holders, each younger than mail:escrow:approval_ttl_hours (403 api-102 otherwise, audited): metadata is mail data too.`,
    tags,
    auth: 'trusted-fresh',
    query: matterSearchQuery,
    response: z.array(searchHit),
    errors: escrowErrors({
      409: 'api-120: the matter is closed',
      403: 'api-102: no access request with M valid approvals; api-103 / api-104: trusted role and fresh elevation',
    }),
    handler: (ctx, { query }) => searchMatter(ctx, query),
  });
}
