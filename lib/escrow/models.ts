import { z } from 'zod';
import { defineModel } from '../storage/index.js';

// Spec: Escrow records. The spec does not show the states; they are designed here and documented
// in OpenAPI (resources.ts, STATES below):
//   matter: open → closed (final).
//   access request: pending → approved (M valid approvals) → closed (its matter closed);
//     pending | approved → withdrawn (by the requester). approved releases material only while the
//     re-checks of every read hold (matter open, approvers still holders, approvals younger than
//     mail:escrow:approval_ttl_hours).
//   scope change: pending → applied (M valid approvals under the scope's current holders and M);
//     pending → withdrawn (requester); pending → superseded (holders or M changed meanwhile).
//   matter export: pending → ready (the worker built the archive) → expired (export_ttl_hours passed
//     or the matter closed: the archive is deleted); pending → failed (export_max_attempts) ;
//     pending → expired (the matter closed before the build).

export const STATES = {
  matter:
    "open → closed (POST /api/escrow/matters/:id/close; final). Closing closes the matter's pending and approved access requests and expires its exports.",
  accessRequest:
    "pending → approved once M valid approvals exist (the requester's own counts) → closed when the matter closes; pending or approved → withdrawn by the requester. approved is recorded when the threshold is reached, but every material read and export re-checks it: the matter is open, each approver still holds the scope, each approval is younger than mail:escrow:approval_ttl_hours.",
  scopeChange:
    "pending → applied once M valid approvals exist under the scope's current holders and M (the requester's own counts); pending → withdrawn by the requester; pending → superseded when the holders or M changed meanwhile.",
  matterExport:
    'pending → ready (the worker built messages.mbox and manifest.json) → expired after mail:escrow:export_ttl_hours or when the matter closes (the archive is deleted); pending → failed after mail:escrow:export_max_attempts; pending → expired when the matter closes first.',
} as const;

const uid = z.string().min(1).max(100);

export const scopeFields = {
  name: z.string().trim().min(1).max(200),
  /** PEM certificate holding the scope's P-256 public key; its private key never reaches the server. Fixed at creation. */
  certificatePem: z.string().min(1).max(20_000),
  /** Principal uids. Changed only by a scope change with M approvals. */
  holders: z.array(z.string().trim().min(1).max(200)).min(1).max(50),
  /** M: holder approvals required per access (and per scope change). */
  approvalsRequired: z.number().int().min(1).max(50),
};
export const EscrowScopeModel = defineModel({ name: 'escrow_scope', table: 'escrow_scopes', fields: scopeFields });

export const matterFields = {
  name: z.string().trim().min(1).max(300),
  description: z.string().max(5000).default(''),
  scopeUid: uid,
  /** Mailbox uids under investigation; each must be assigned to the matter's scope. Fixed at creation. */
  custodians: z.array(uid).min(1).max(1000),
  from: z.coerce.date(),
  to: z.coerce.date(),
  state: z.enum(['open', 'closed']).default('open').describe(STATES.matter),
};
export const MatterModel = defineModel({
  name: 'escrow_matter',
  table: 'escrow_matters',
  fields: matterFields,
  indexes: [{ fields: ['scopeUid'] }],
});

export const accessRequestFields = {
  matterUid: uid,
  reason: z.string().trim().min(1).max(2000),
  requester: z.string().default(''),
  /** The matter's scope (kept by the server, so lists narrow to the scopes the caller holds). */
  scopeUid: z.string().default(''),
  state: z.enum(['pending', 'approved', 'withdrawn', 'closed']).default('pending').describe(STATES.accessRequest),
};
export const AccessRequestModel = defineModel({
  name: 'escrow_access_request',
  table: 'escrow_access_requests',
  fields: accessRequestFields,
  indexes: [{ fields: ['matterUid'] }, { fields: ['scopeUid'] }],
});

export const scopeChangeFields = {
  scopeUid: uid,
  requester: z.string(),
  reason: z.string().trim().min(1).max(2000),
  /** The proposal; null keeps the current value. */
  holders: z.array(z.string()).nullable(),
  approvalsRequired: z.number().int().nullable(),
  /** The holders and M the proposal was made against: a change to either supersedes it. */
  baseHolders: z.array(z.string()),
  baseApprovalsRequired: z.number().int(),
  state: z.enum(['pending', 'applied', 'withdrawn', 'superseded']).describe(STATES.scopeChange),
};
export const ScopeChangeModel = defineModel({
  name: 'escrow_scope_change',
  table: 'escrow_scope_changes',
  fields: scopeChangeFields,
  indexes: [{ fields: ['scopeUid'] }],
});

/** One holder's approval of an access request or of a scope change (requestUid names either). */
export const approvalFields = {
  requestUid: z.string(),
  holder: z.string(),
  approvedAt: z.date(),
};
export const ApprovalModel = defineModel({
  name: 'escrow_approval',
  table: 'escrow_approvals',
  fields: approvalFields,
  indexes: [{ fields: ['requestUid', 'holder'], unique: true }],
});

/** A holder's refusal of an access request, with why (lib/escrow/decisions.ts). */
export const declineFields = {
  requestUid: z.string(),
  holder: z.string(),
  reason: z.string().default(''),
  declinedAt: z.date(),
};
export const DeclineModel = defineModel({
  name: 'escrow_decline',
  table: 'escrow_declines',
  fields: declineFields,
  indexes: [{ fields: ['requestUid', 'holder'], unique: true }],
});

export const matterExportFields = {
  accessRequestUid: uid,
  matterUid: z.string(),
  scopeUid: z.string(),
  requester: z.string(),
  state: z.enum(['pending', 'ready', 'failed', 'expired']).describe(STATES.matterExport),
  attempts: z.number().int().default(0),
  nextAttemptAt: z.date(),
  /** Why the last build failed (kept for the operators' log; not answered). */
  lastError: z.string().nullable().default(null),
  messageCount: z.number().int().nullable().default(null),
  /** Bytes and SHA-256 (hex) of messages.mbox and manifest.json, for the holders to check. */
  mboxSize: z.number().int().nullable().default(null),
  mboxSha256: z.string().nullable().default(null),
  manifestSha256: z.string().nullable().default(null),
  readyAt: z.date().nullable().default(null),
  expiresAt: z.date().nullable().default(null),
};
export const MatterExportModel = defineModel({
  name: 'escrow_matter_export',
  table: 'escrow_matter_exports',
  fields: matterExportFields,
  lease: true,
  indexes: [{ fields: ['state', 'nextAttemptAt'] }, { fields: ['matterUid'] }, { fields: ['scopeUid'] }],
});

export const escrowAuditFields = {
  seq: z.number().int().positive(),
  actor: z.string(),
  action: z.string(),
  /** The scope the entry belongs to: its holders read it (GET /api/escrow/audit-log). Hashed with the rest. */
  scopeUid: z.string().nullable().default(null),
  details: z.record(z.string(), z.unknown()).default({}),
  at: z.string(),
  prevHash: z.string(),
  hash: z.string(),
  /** hmac-sha256 (mail:escrow:audit_hmac_key set) or sha256. */
  alg: z.enum(['hmac-sha256', 'sha256']),
};
export const EscrowAuditModel = defineModel({
  name: 'escrow_audit_entry',
  table: 'escrow_audit_entries',
  fields: escrowAuditFields,
  indexes: [{ fields: ['seq'], unique: true }, { fields: ['scopeUid', 'seq'] }],
});

export type Scope = z.infer<z.ZodObject<typeof scopeFields>>;
export type Matter = z.infer<z.ZodObject<typeof matterFields>>;
export type AccessRequest = z.infer<z.ZodObject<typeof accessRequestFields>>;
export type ScopeChange = z.infer<z.ZodObject<typeof scopeChangeFields>>;
export type Approval = z.infer<z.ZodObject<typeof approvalFields>>;
export type Decline = z.infer<z.ZodObject<typeof declineFields>>;
export type MatterExport = z.infer<z.ZodObject<typeof matterExportFields>>;
export type EscrowAuditEntry = z.infer<z.ZodObject<typeof escrowAuditFields>>;

export const ESCROW_MODELS = [
  EscrowScopeModel,
  MatterModel,
  AccessRequestModel,
  ScopeChangeModel,
  ApprovalModel,
  DeclineModel,
  MatterExportModel,
  EscrowAuditModel,
];
