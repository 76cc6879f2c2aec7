import type { Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { mailboxEscrowInfo } from './assignments.js';

/**
 * Spec: resource groups — "escrow info under /:id/" of a mailbox. The owner's client reads the scope
 * certificate here to add the escrow wrap (the master key encrypted to it). Mailbox data: the
 * mailbox's readers only, trusted roles stripped (an administrator gets 404 like anyone else).
 */
export function mailboxInfoRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/mailboxes/:id/escrow',
    operationId: 'mailbox_escrow_info',
    summary: "The mailbox's escrow scope and its certificate, for the owner's client to add the escrow wrap",
    description:
      'scope is null while the mailbox is assigned to no escrow scope. needsEscrowWrap: the vault is enrolled and has no escrow wrap of the current master-key generation to this scope; the client then POSTs keyvault/wraps with {method: "escrow", scopeUid, envelope} (the master key in CMS EnvelopedData to certificatePem). Readers of the mailbox only; trusted roles do not count (404).',
    tags: ['keys'],
    auth: 'signed-in',
    response: z.object({
      mailboxUid: z.string(),
      masterKeyGeneration: z.number().int(),
      scope: z
        .object({
          uid: z.string(),
          name: z.string(),
          certificatePem: z.string(),
          fingerprint: z.string().describe('SHA-256 of the DER, hex'),
        })
        .nullable(),
      hasEscrowWrap: z.boolean(),
      escrowWrapId: z.string().nullable(),
      needsEscrowWrap: z.boolean(),
    }),
    errors: { 404: 'api-107: no such mailbox, or one the caller cannot see' },
    handler: (ctx, { params }) => mailboxEscrowInfo(ctx, params.id),
  });
}
