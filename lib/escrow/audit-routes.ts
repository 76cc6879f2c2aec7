import { z } from 'zod';
import { denied, notFound, parseOrThrow } from '../errors/index.js';
import { jsonSchema } from '../http/index.js';
import { heldScopeUids } from './access.js';
import { verifyEscrowAudit } from './audit.js';
import type { AddRoute } from './http.js';
import { EscrowAuditModel, escrowAuditFields, type EscrowAuditEntry } from './models.js';

const entryDoc = jsonSchema(z.object({ uid: z.string(), ...escrowAuditFields }));

/**
 * The escrow audit log, for holders: each reads the entries of the scopes they hold. The chain runs
 * through every scope's entries, so verification is done here, over the whole chain.
 */
export function auditRoutes(route: AddRoute): void {
  route(
    'get',
    '/api/escrow/audit-log',
    async (ctx, req, res) => {
      const q = parseOrThrow(
        z
          .object({
            scopeUid: z.string().min(1).optional(),
            limit: z.coerce.number().int().min(1).max(1000).default(100),
            page: z.coerce.number().int().min(0).default(0),
          })
          .strict(),
        req.query,
        'audit-log takes ?scopeUid=&limit=&page=',
      );
      const held = await heldScopeUids(ctx);
      if (!held.length) throw denied('the escrow audit log is read by the holders of a scope');
      if (q.scopeUid && !held.includes(q.scopeUid)) throw notFound();
      const rows = await ctx.store.repo<EscrowAuditEntry>(EscrowAuditModel).list({
        filter: { scopeUid: { $in: q.scopeUid ? [q.scopeUid] : held } },
        sort: [{ field: 'seq', dir: 'asc' }],
        limit: q.limit,
        offset: q.page * q.limit,
      });
      res.json(rows);
    },
    {
      summary:
        'Escrow audit entries of the scopes the caller holds, in order; each carries the hash of the previous entry of the whole chain',
      description:
        'Holders only: a caller holding no scope gets 403 api-102; ?scopeUid= of a scope the caller does not hold answers 404. Entries of other scopes are left out (their seq numbers leave gaps).',
      query: [
        { name: 'scopeUid', in: 'query', schema: { type: 'string' } },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 1000 } },
        { name: 'page', in: 'query', schema: { type: 'integer', minimum: 0 } },
      ],
      response: { type: 'array', items: entryDoc },
    },
  );

  route(
    'get',
    '/api/escrow/audit-log/verify',
    async (ctx, _req, res) => {
      if (!(await heldScopeUids(ctx)).length) throw denied('the escrow audit log is verified by the holders of a scope');
      res.json(await verifyEscrowAudit(ctx.store, ctx.config));
    },
    {
      summary: 'Verify the whole chain (HMAC-SHA256 under mail:escrow:audit_hmac_key, else SHA-256); reports the first broken link',
      description: 'Holders of any scope (else 403 api-102).',
      response: {
        type: 'object',
        properties: {
          ok: { type: 'boolean' },
          entries: { type: 'integer' },
          brokenAt: { type: 'object', properties: { seq: { type: 'integer' }, reason: { type: 'string' } } },
        },
      },
    },
  );
}
