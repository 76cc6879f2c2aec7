import { createHash } from 'node:crypto';
import { X509Certificate } from '@peculiar/x509';
import express, { type Router } from 'express';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { KeyVaultModel, loadMailbox } from '../keys/index.js';
import type { Deps } from '../context/index.js';
import { EscrowScopeModel, type Scope } from './models.js';

type Vault = { enrolled: boolean; escrowScopeUid?: string | null; masterKeyGeneration: number; wraps: Array<Record<string, unknown>> };

const PATH = '/api/mail/mailboxes/:id/escrow';

/**
 * Spec: resource groups — "escrow info under /:id/" of a mailbox. The owner's client reads the scope
 * certificate here to add the escrow wrap (the master key encrypted to it). Mailbox data: the
 * mailbox's readers only, trusted roles stripped (an administrator gets 404 like anyone else).
 * The holders and M are not shown.
 */
export function mailboxEscrowRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  router.get(PATH, async (req, res, next) => {
    try {
      const ctx = ctxOf(req, deps);
      const mailboxUid = String(req.params.id);
      await loadMailbox(ctx, mailboxUid, 'read');
      const v = await ctx.store.repo<Vault>(KeyVaultModel).findOne({ mailboxUid });
      const scope = v?.escrowScopeUid ? await ctx.store.repo<Scope>(EscrowScopeModel).get(v.escrowScopeUid) : null;
      const wrap =
        scope && v
          ? v.wraps.find((w) => w.method === 'escrow' && w.scopeUid === scope.uid && w.masterKeyGeneration === v.masterKeyGeneration)
          : undefined;
      res.json({
        mailboxUid,
        masterKeyGeneration: v?.masterKeyGeneration ?? 0,
        scope: scope
          ? {
              uid: scope.uid,
              name: scope.name,
              certificatePem: scope.certificatePem,
              fingerprint: createHash('sha256')
                .update(Buffer.from(new X509Certificate(scope.certificatePem).rawData))
                .digest('hex'),
            }
          : null,
        hasEscrowWrap: Boolean(wrap),
        escrowWrapId: (wrap?.id as string | undefined) ?? null,
        needsEscrowWrap: Boolean(scope && v?.enrolled && !wrap),
      });
    } catch (e) {
      next(e);
    }
  });
  openapi.add('get', PATH, {
    operationId: 'mailbox_escrow_info',
    tags: ['keys'],
    auth: 'signed-in',
    summary: "The mailbox's escrow scope and its certificate, for the owner's client to add the escrow wrap",
    description:
      'scope is null while the mailbox is assigned to no escrow scope. needsEscrowWrap: the vault is enrolled and has no escrow wrap of the current master-key generation to this scope; the client then POSTs keyvault/wraps with {method: "escrow", scopeUid, envelope} (the master key in CMS EnvelopedData to certificatePem). Readers of the mailbox only; trusted roles do not count (404).',
    responses: {
      200: {
        description: 'escrow info',
        schema: {
          type: 'object',
          properties: {
            mailboxUid: { type: 'string' },
            masterKeyGeneration: { type: 'integer' },
            scope: {
              type: ['object', 'null'],
              properties: {
                uid: { type: 'string' },
                name: { type: 'string' },
                certificatePem: { type: 'string' },
                fingerprint: { type: 'string', description: 'SHA-256 of the DER, hex' },
              },
            },
            hasEscrowWrap: { type: 'boolean' },
            escrowWrapId: { type: ['string', 'null'] },
            needsEscrowWrap: { type: 'boolean' },
          },
        },
      },
      404: { description: 'api-107: no such mailbox, or one the caller cannot see' },
    },
  });
  return router;
}
