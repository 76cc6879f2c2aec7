import type { Request } from 'express';
import { z } from 'zod';
import { ApiError, notFound, parseOrThrow } from '../errors/index.js';
import { KeyVaultModel, setEscrowScope } from '../keys/index.js';
import { MailboxModel } from '../mail/index.js';
import { type Ctx } from '../context/index.js';
import { escrowAudit, scopeForHolder } from './access.js';
import type { AddRoute } from './http.js';
import { MatterModel, STATES, type Matter } from './models.js';
import { approveChange, listChanges, proposeChange, withdrawChange } from './scope-changes.js';

type Vault = { mailboxUid: string; escrowScopeUid?: string | null; masterKeyGeneration: number; wraps: Array<Record<string, unknown>> };

const hasCurrentEscrowWrap = (v: Vault, scopeUid: string) =>
  v.wraps.some((w) => w.method === 'escrow' && w.scopeUid === scopeUid && w.masterKeyGeneration === v.masterKeyGeneration);

/** The owner's client watches its mailbox channel: an assignment asks it to add (or drop) the escrow wrap. */
const tellOwner = (ctx: Ctx, mailboxUid: string, escrowScopeUid: string | null) =>
  ctx.events.publish([mailboxUid], { type: 'keyvault', action: 'update', data: { mailboxUid, escrowScopeUid } });

const changeDoc = {
  type: 'object',
  required: ['reason'],
  properties: {
    holders: { type: 'array', items: { type: 'string' }, description: 'the new holder list (principal uids)' },
    approvalsRequired: { type: 'integer', description: 'the new M (at least mail:escrow:min_approvals, at most the holders)' },
    reason: { type: 'string' },
  },
};
const changeView = {
  type: 'object',
  description: `A scope change. States: ${STATES.scopeChange}`,
  properties: {
    uid: { type: 'string' },
    scopeUid: { type: 'string' },
    requester: { type: 'string' },
    reason: { type: 'string' },
    holders: { type: ['array', 'null'] },
    approvalsRequired: { type: ['integer', 'null'] },
    state: { enum: ['pending', 'applied', 'withdrawn', 'superseded'] },
    approvals: {
      type: 'array',
      items: { type: 'object', properties: { holder: { type: 'string' }, approvedAt: { type: 'string' }, valid: { type: 'boolean' } } },
    },
  },
};

/** Mailbox assignment (Spec: Key vault, escrow wrap) and changes of holders and M, for the scope's holders. */
export function scopeRoutes(route: AddRoute): void {
  const BASE = '/api/escrow/scopes/:id';
  const id = (req: Request) => String(req.params.id);

  route(
    'post',
    `${BASE}/mailboxes`,
    async (ctx, req, res) => {
      const { mailboxUid } = parseOrThrow(
        z.object({ mailboxUid: z.string().min(1).max(100) }).strict(),
        req.body,
        'assign takes {mailboxUid}',
      );
      const scope = await scopeForHolder(ctx, id(req), 'scope.assign', { mailboxUid });
      if (!(await ctx.store.repo(MailboxModel).get(mailboxUid))) throw notFound('No such mailbox');
      const vault = await ctx.store.repo<Vault>(KeyVaultModel).findOne({ mailboxUid });
      // Moving a mailbox would drop another scope's escrow wrap: that scope's holders unassign it first.
      if (vault?.escrowScopeUid && vault.escrowScopeUid !== scope.uid)
        throw new ApiError('api-120', 'the mailbox is assigned to another escrow scope; a holder of that scope unassigns it first');
      if (vault?.escrowScopeUid !== scope.uid) {
        await ctx.store.transaction(async (tx) => {
          await setEscrowScope(tx, mailboxUid, scope.uid);
          await escrowAudit({ ...ctx, store: tx }, 'scope.assign', scope.uid, { mailboxUid });
        });
        tellOwner(ctx, mailboxUid, scope.uid);
      }
      res.status(201).json({ scopeUid: scope.uid, mailboxUid });
    },
    {
      summary:
        "Assign a mailbox to the scope; its owner's client then adds the escrow wrap (GET /api/mail/mailboxes/:id/escrow gives it the certificate)",
      description:
        'Holders of the scope only. A mailbox belongs to one scope at most: one assigned elsewhere answers 409 api-120. Audited (scope.assign).',
      status: 201,
      body: { type: 'object', required: ['mailboxUid'], properties: { mailboxUid: { type: 'string' } } },
      errors: { 409: 'api-120: assigned to another scope' },
    },
  );

  route(
    'get',
    `${BASE}/mailboxes`,
    async (ctx, req, res) => {
      const scope = await scopeForHolder(ctx, id(req));
      const vaults = await ctx.store.repo<Vault>(KeyVaultModel).list({ filter: { escrowScopeUid: scope.uid }, limit: 10_000 });
      res.json(vaults.map((v) => ({ mailboxUid: v.mailboxUid, hasEscrowWrap: hasCurrentEscrowWrap(v, scope.uid) })));
    },
    {
      summary: 'Mailboxes assigned to the scope, and which still lack a current escrow wrap',
      description: 'Holders of the scope only.',
      response: {
        type: 'array',
        items: { type: 'object', properties: { mailboxUid: { type: 'string' }, hasEscrowWrap: { type: 'boolean' } } },
      },
    },
  );

  route(
    'delete',
    `${BASE}/mailboxes/:mailboxUid`,
    async (ctx, req, res) => {
      const mailboxUid = String(req.params.mailboxUid);
      const scope = await scopeForHolder(ctx, id(req), 'scope.unassign', { mailboxUid });
      const vault = await ctx.store.repo<Vault>(KeyVaultModel).findOne({ mailboxUid });
      if (vault?.escrowScopeUid !== scope.uid) throw notFound('The mailbox is not assigned to this scope');
      const open = await ctx.store.repo<Matter>(MatterModel).list({ filter: { scopeUid: scope.uid, state: 'open' }, limit: 10_000 });
      const holding = open.filter((m) => m.custodians.includes(mailboxUid)).map((m) => m.uid);
      if (holding.length)
        throw new ApiError('api-120', `the mailbox is a custodian of open matters (${holding.join(', ')}); close them first`);
      await ctx.store.transaction(async (tx) => {
        // The escrow wrap is removed, not kept stale: nothing addressed to this scope stays releasable.
        await setEscrowScope(tx, mailboxUid, null);
        await escrowAudit({ ...ctx, store: tx }, 'scope.unassign', scope.uid, {
          mailboxUid,
          escrowWrapRemoved: vault.wraps.some((w) => w.method === 'escrow'),
        });
      });
      tellOwner(ctx, mailboxUid, null);
      res.status(204).end();
    },
    {
      summary: 'Unassign a mailbox from the scope; its escrow wrap is removed from the vault',
      description:
        'Holders of the scope only. Refused (409 api-120) while the mailbox is a custodian of an open matter of the scope. The escrow wrap is deleted (not kept stale), so no material for this mailbox can be released afterwards. Audited (scope.unassign).',
      status: 204,
      errors: { 409: 'api-120: custodian of an open matter' },
    },
  );

  route(
    'get',
    `${BASE}/changes`,
    async (ctx, req, res) => {
      res.json(await listChanges(ctx, id(req)));
    },
    {
      summary: 'Proposed changes of the holders and M, newest first, with their approvals',
      description: 'Holders of the scope only.',
      response: { type: 'array', items: changeView },
    },
  );

  route(
    'post',
    `${BASE}/changes`,
    async (ctx, req, res) => {
      res.status(201).json(await proposeChange(ctx, id(req), req.body));
    },
    {
      summary: 'Propose new holders and/or a new M for the scope',
      description: `Holders of the scope only. The requester's approval counts; the change applies once M valid approvals exist under the current holders and M (approvals expire after mail:escrow:approval_ttl_hours). The result must keep mail:escrow:min_approvals <= M <= holders. The certificate never changes. Audited (scope.change.*). ${STATES.scopeChange}`,
      status: 201,
      body: changeDoc,
      response: changeView,
    },
  );

  route(
    'post',
    `${BASE}/changes/:changeId/approve`,
    async (ctx, req, res) => {
      res.json(await approveChange(ctx, id(req), String(req.params.changeId)));
    },
    {
      summary: 'Approve a scope change as a holder (approving again renews an aged approval)',
      description:
        'Holders of the scope only. Applies the change when M valid approvals exist. 409 api-120 when the change is not pending or was superseded (the holders or M changed since it was proposed).',
      response: changeView,
      errors: { 409: 'api-120: not pending, or superseded' },
    },
  );

  route(
    'post',
    `${BASE}/changes/:changeId/withdraw`,
    async (ctx, req, res) => {
      res.json(await withdrawChange(ctx, id(req), String(req.params.changeId)));
    },
    {
      summary: 'Withdraw a pending scope change',
      description: 'The requester only (another holder: 403 api-102).',
      response: changeView,
      errors: { 409: 'api-120: not pending' },
    },
  );
}
