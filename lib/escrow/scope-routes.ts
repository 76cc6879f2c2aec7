import type { Router } from 'express';
import { z } from 'zod';
import { isoDate, defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { assignedMailboxes, assignMailbox, unassignMailbox } from './assignments.js';
import { escrowErrors } from './http.js';
import { STATES, scopeChangeFields } from './models.js';
import { approveChange, changeInput, listChanges, proposeChange, withdrawChange } from './scope-changes.js';

const changeView = z
  .object({
    uid: z.string(),
    version: z.number().int(),
    createdAt: isoDate,
    updatedAt: isoDate,
    ...scopeChangeFields,
    approvals: z.array(z.object({ holder: z.string(), approvedAt: isoDate, valid: z.boolean() })),
  })
  .describe(`A scope change. States: ${STATES.scopeChange}`);

/** Mailbox assignment (Spec: Key vault, escrow wrap) and changes of holders and M, for the scope's holders. */
export function scopeRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const BASE = '/api/escrow/scopes/:id';
  const tags = ['escrow'];

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${BASE}/mailboxes`,
    operationId: 'escrow_scopes_id_mailboxes_post',
    summary:
      "Assign a mailbox to the scope; its owner's client then adds the escrow wrap (GET /api/mail/mailboxes/:id/escrow gives it the certificate)",
    description:
      'Holders of the scope only. A mailbox belongs to one scope at most: one assigned elsewhere answers 409 api-120. Audited (scope.assign).',
    tags,
    auth: 'trusted-fresh',
    body: z.strictObject({ mailboxUid: z.string().min(1).max(100) }),
    status: 201,
    response: z.object({ scopeUid: z.string(), mailboxUid: z.string() }),
    errors: escrowErrors({ 409: 'api-120: assigned to another scope' }),
    handler: (ctx, { params, body }) => assignMailbox(ctx, params.id, body.mailboxUid),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${BASE}/mailboxes`,
    operationId: 'escrow_scopes_id_mailboxes_get',
    summary: 'Mailboxes assigned to the scope, and which still lack a current escrow wrap',
    description: 'Holders of the scope only.',
    tags,
    auth: 'trusted-fresh',
    response: z.array(z.object({ mailboxUid: z.string(), hasEscrowWrap: z.boolean() })),
    errors: escrowErrors(),
    handler: (ctx, { params }) => assignedMailboxes(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: `${BASE}/mailboxes/:mailboxUid`,
    operationId: 'escrow_scopes_id_mailboxes_mailboxUid_delete',
    summary: 'Unassign a mailbox from the scope; its escrow wrap is removed from the vault',
    description:
      'Holders of the scope only. Refused (409 api-120) while the mailbox is a custodian of an open matter of the scope. The escrow wrap is deleted (not kept stale), so no material for this mailbox can be released afterwards. Audited (scope.unassign).',
    tags,
    auth: 'trusted-fresh',
    status: 204,
    errors: escrowErrors({ 409: 'api-120: custodian of an open matter' }),
    handler: (ctx, { params }) => unassignMailbox(ctx, params.id, params.mailboxUid),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${BASE}/changes`,
    operationId: 'escrow_scopes_id_changes_get',
    summary: 'Proposed changes of the holders and M, newest first, with their approvals',
    description: 'Holders of the scope only.',
    tags,
    auth: 'trusted-fresh',
    response: z.array(changeView),
    errors: escrowErrors(),
    handler: (ctx, { params }) => listChanges(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${BASE}/changes`,
    operationId: 'escrow_scopes_id_changes_post',
    summary: 'Propose new holders and/or a new M for the scope',
    description: `Holders of the scope only. The requester's approval counts; the change applies once M valid approvals exist under the current holders and M (approvals expire after mail:escrow:approval_ttl_hours). The result must keep mail:escrow:min_approvals <= M <= holders. The certificate never changes. Audited (scope.change.*). ${STATES.scopeChange}`,
    tags,
    auth: 'trusted-fresh',
    body: changeInput,
    status: 201,
    response: changeView,
    errors: escrowErrors(),
    handler: (ctx, { params, body }) => proposeChange(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${BASE}/changes/:changeId/approve`,
    operationId: 'escrow_scopes_id_changes_changeId_approve_post',
    summary: 'Approve a scope change as a holder (approving again renews an aged approval)',
    description:
      'Holders of the scope only. Applies the change when M valid approvals exist. 409 api-120 when the change is not pending or was superseded (the holders or M changed since it was proposed).',
    tags,
    auth: 'trusted-fresh',
    response: changeView,
    errors: escrowErrors({ 409: 'api-120: not pending, or superseded' }),
    handler: (ctx, { params }) => approveChange(ctx, params.id, params.changeId),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${BASE}/changes/:changeId/withdraw`,
    operationId: 'escrow_scopes_id_changes_changeId_withdraw_post',
    summary: 'Withdraw a pending scope change',
    description: 'The requester only (another holder: 403 api-102).',
    tags,
    auth: 'trusted-fresh',
    response: changeView,
    errors: escrowErrors({ 409: 'api-120: not pending' }),
    handler: (ctx, { params }) => withdrawChange(ctx, params.id, params.changeId),
  });
}
