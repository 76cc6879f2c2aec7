import type { Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { auditEntries, auditLogQuery, verifyAuditChain } from './audit-log.js';
import { escrowErrors } from './http.js';
import { escrowAuditFields } from './models.js';

const entry = z.object({ uid: z.string(), ...escrowAuditFields });

/** The escrow audit log, for holders: each reads the entries of the scopes they hold, and verifies the whole chain. */
export function auditRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const tags = ['escrow'];

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/escrow/audit-log',
    operationId: 'escrow_auditlog_get',
    summary:
      'Escrow audit entries of the scopes the caller holds, in order; each carries the hash of the previous entry of the whole chain',
    description:
      'Holders only: a caller holding no scope gets 403 api-102; ?scopeUid= of a scope the caller does not hold answers 404. Entries of other scopes are left out (their seq numbers leave gaps).',
    tags,
    auth: 'trusted-fresh',
    query: auditLogQuery,
    response: z.array(entry),
    errors: escrowErrors(),
    handler: (ctx, { query }) => auditEntries(ctx, query),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/escrow/audit-log/verify',
    operationId: 'escrow_auditlog_verify_get',
    summary: 'Verify the whole chain (HMAC-SHA256 under mail:escrow:audit_hmac_key, else SHA-256); reports the first broken link',
    description: 'Holders of any scope (else 403 api-102).',
    tags,
    auth: 'trusted-fresh',
    response: z.object({
      ok: z.boolean(),
      entries: z.number().int(),
      brokenAt: z
        .object({ seq: z.number().int(), reason: z.string() })
        .optional()
        .describe('the first entry whose link or hash does not hold'),
    }),
    errors: escrowErrors(),
    handler: (ctx) => verifyAuditChain(ctx),
  });
}
