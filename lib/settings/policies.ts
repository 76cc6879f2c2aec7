import { z } from 'zod';
import type { Deps } from '../context/index.js';
import { defineSingleton, type SingletonView } from './singleton.js';

// Spec: /api/system/ mailbox-policy and retention-policy (fields "not shown": designed here).
// Both are one record per deployment; read by any signed-in user (the settings pages show users
// their alias limit, whether plus-addressing works and how long mail is kept), changed by a trusted
// role with fresh elevation (Spec: Roles and elevation lists retention as sensitive), audited.

const receipt = z.enum(['always', 'never', 'ask']);

export const mailboxPolicyFields = {
  /** Quota (bytes) of a mailbox created without quotaBytes; 0 means no quota. */
  defaultQuotaBytes: z.number().int().nonnegative().max(Number.MAX_SAFE_INTEGER).default(0),
  /** Most aliases one mailbox may have (the mailbox record itself allows 100). */
  maxAliases: z.number().int().min(0).max(100).default(100),
  /** user+tag@ reaches user@ only while both this and mail:plus_addressing:enabled allow it. */
  plusAddressing: z.boolean().default(true),
  /** Read-receipt settings of a mailbox created without receiptSettings. */
  defaultReceiptSettings: z
    .object({ internal: receipt, federated: receipt, external: receipt })
    .strict()
    .default({ internal: 'ask', federated: 'ask', external: 'never' }),
};

export const mailboxPolicy = defineSingleton({
  name: 'mailbox-policy',
  table: 'mailbox_policy',
  fields: mailboxPolicyFields,
  read: 'signed-in',
  summary: 'Defaults and limits for mailboxes: default quota, alias limit, plus-addressing, default receipt settings',
  description:
    'defaultQuotaBytes and defaultReceiptSettings apply to mailboxes created later without their own values; maxAliases is checked whenever aliases change; plusAddressing takes effect at once for inbound mail.',
});
export type MailboxPolicy = SingletonView<typeof mailboxPolicyFields>;

export function readMailboxPolicy(deps: Pick<Deps, 'store'>): Promise<MailboxPolicy> {
  return mailboxPolicy.read(deps);
}

/** Folder classes the retention job knows; drafts and the Outbox are never aged out (work in progress, pending sends). */
export const RETENTION_CLASSES = ['inbox', 'sent', 'deleted', 'junk', 'archive', 'user'] as const;
export type RetentionClass = (typeof RETENTION_CLASSES)[number];
/** The folder role of each class; user folders are those without a role. */
export const ROLE_OF_CLASS: Record<RetentionClass, string | null> = {
  inbox: 'inbox',
  sent: 'sent',
  deleted: 'trash',
  junk: 'junk',
  archive: 'archive',
  user: null,
};

const days = z.number().int().min(1).max(36_500).nullable().default(null);
export const retentionPolicyFields = {
  /** Messages older than this many days are deleted; null keeps them. */
  inboxDays: days,
  sentDays: days,
  /** Deleted Items. */
  deletedDays: days,
  junkDays: days,
  archiveDays: days,
  /** Every folder the user created (no role). */
  userFoldersDays: days,
};

export const retentionPolicy = defineSingleton({
  name: 'retention-policy',
  table: 'retention_policy',
  fields: retentionPolicyFields,
  read: 'signed-in',
  summary: 'Maximum age of messages per folder class (null: kept)',
  description:
    "The retention job in the worker deletes messages whose Date and arrival are both older than the age of their folder class, never messages on legal hold (an open escrow matter naming the mailbox as custodian, within the matter's date range). Drafts and the Outbox are never aged out.",
});
export type RetentionPolicy = SingletonView<typeof retentionPolicyFields>;

export function readRetentionPolicy(deps: Pick<Deps, 'store'>): Promise<RetentionPolicy> {
  return retentionPolicy.read(deps);
}

/** The max age in days of a folder class under the policy (null: kept). */
export function retentionDays(policy: RetentionPolicy, cls: RetentionClass): number | null {
  const field = (cls === 'user' ? 'userFoldersDays' : `${cls}Days`) as keyof typeof retentionPolicyFields;
  return policy[field];
}
