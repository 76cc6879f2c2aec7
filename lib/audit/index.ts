import { z } from 'zod';
import type { Principal } from '../auth/index.js';
import { defineModel, type Store } from '../storage/index.js';

// The audit log: who, what, when, from where, before/after where it matters. Append-only: nothing
// in the product updates or deletes an entry (the audit-log resource is read-only).
export const auditFields = {
  actor: z.string(),
  actorVia: z.string(),
  action: z.string(),
  resource: z.string().nullable().optional(),
  resourceUid: z.string().nullable().optional(),
  ip: z.string().nullable().optional(),
  requestId: z.string().nullable().optional(),
  before: z.record(z.string(), z.unknown()).nullable().optional(),
  after: z.record(z.string(), z.unknown()).nullable().optional(),
  details: z.record(z.string(), z.unknown()).nullable().optional(),
};

export const AuditEntryModel = defineModel({
  name: 'audit_entry',
  table: 'audit_entries',
  fields: auditFields,
  indexes: [{ fields: ['createdAt'] }, { fields: ['actor'] }, { fields: ['resourceUid'] }],
});

export type AuditEntry = z.infer<z.ZodObject<typeof auditFields>>;

export interface AuditWho {
  principal: Principal;
  ip?: string;
  requestId?: string;
}

export async function writeAudit(
  store: Store,
  who: AuditWho,
  entry: Omit<AuditEntry, 'actor' | 'actorVia' | 'ip' | 'requestId'>,
): Promise<void> {
  await store.repo<AuditEntry>(AuditEntryModel).create({
    ...entry,
    actor: who.principal.uid,
    actorVia: who.principal.via,
    ip: who.ip ?? null,
    requestId: who.requestId ?? null,
  });
}
