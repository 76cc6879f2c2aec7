// The escrow audit log as the holders read it: each reads the entries of the scopes they hold. The
// chain runs through every scope's entries, so verification is done over the whole chain. Service
// functions: audit-routes.ts declares the routes that call them.
import { z } from 'zod';
import { denied, notFound } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { heldScopeUids } from './access.js';
import { verifyEscrowAudit, type ChainVerdict } from './audit.js';
import { EscrowAuditModel, type EscrowAuditEntry } from './models.js';

export const auditLogQuery = z.object({
  scopeUid: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  page: z.coerce.number().int().min(0).default(0),
});

/** Entries of the scopes the caller holds, in chain order (403 without any; 404 for a scope not held). */
export async function auditEntries(ctx: Ctx, q: z.output<typeof auditLogQuery>): Promise<Row<EscrowAuditEntry>[]> {
  const held = await heldScopeUids(ctx);
  if (!held.length) throw denied('the escrow audit log is read by the holders of a scope');
  if (q.scopeUid && !held.includes(q.scopeUid)) throw notFound();
  return ctx.store.repo<EscrowAuditEntry>(EscrowAuditModel).list({
    filter: { scopeUid: { $in: q.scopeUid ? [q.scopeUid] : held } },
    sort: [{ field: 'seq', dir: 'asc' }],
    limit: q.limit,
    offset: q.page * q.limit,
  });
}

/** Verifies the whole chain, for a holder of any scope. */
export async function verifyAuditChain(ctx: Ctx): Promise<ChainVerdict> {
  if (!(await heldScopeUids(ctx)).length) throw denied('the escrow audit log is verified by the holders of a scope');
  return verifyEscrowAudit(ctx.store, ctx.config);
}
