import { z } from 'zod';
import { DistributionListModel } from '../mail/index.js';
import { defineModel } from '../storage/index.js';

export { DistributionListModel, distributionListFields, type DistributionList } from '../mail/index.js';

export const INGEST_STATES = ['queued', 'delivered', 'junk', 'quarantined', 'consumed', 'discarded', 'failed'] as const;
export type IngestState = (typeof INGEST_STATES)[number];

/**
 * One per recipient mailbox of an inbound message (Spec: Ingest queue entry). The uid is a hash of
 * the SMTP transaction and the mailbox, so a retried hand-off creates no second entry; the raw
 * message is stored once (content-addressed) and referenced by every entry.
 */
export const ingestEntryFields = {
  transactionId: z.string(),
  mailboxUid: z.string(),
  /** The envelope recipient as the MTA gave it (before alias, list and plus resolution). */
  recipient: z.string(),
  envelopeFrom: z.string(),
  /** The SMTP client the MTA received it from (hand-off headers X-Envelope-Client-*): given to the spam scanner. */
  clientAddress: z.string().nullable().default(null),
  clientHelo: z.string().nullable().default(null),
  clientHostname: z.string().nullable().default(null),
  rawRef: z.string(),
  size: z.number().int().nonnegative(),
  state: z.enum(INGEST_STATES).default('queued'),
  attempts: z.number().int().nonnegative().default(0),
  nextAttemptAt: z.date(),
  lastError: z.string().nullable().default(null),
  /** A transport rule asked for quarantine (overrides the scan result). */
  transportQuarantine: z.boolean().default(false),
  /** The name of that rule: the held message's detail, so the administrator sees why. */
  quarantineRule: z.string().nullable().default(null),
  /** Plus-address tag (user+tag@) when the recipient carried one. */
  tag: z.string().nullable().default(null),
  /** The distribution list the copy came through, if any. */
  viaList: z.string().nullable().default(null),
  verdict: z.record(z.string(), z.unknown()).nullable().default(null),
  folderRole: z.string().nullable().default(null),
  messageUid: z.string().nullable().default(null),
  finishedAt: z.date().nullable().default(null),
};
export type IngestEntry = z.infer<z.ZodObject<typeof ingestEntryFields>>;
export const IngestEntryModel = defineModel({
  name: 'ingest_entry',
  table: 'ingest_entries',
  fields: ingestEntryFields,
  lease: true,
  indexes: [{ fields: ['state', 'nextAttemptAt'] }, { fields: ['transactionId'] }, { fields: ['mailboxUid'] }, { fields: ['rawRef'] }],
  // Finished entries hand the raw message on (to a message, a quarantine item, a control message) or drop it.
  blobHolders: [{ field: 'rawRef', while: { state: { $in: ['queued', 'failed'] } } }],
});

/** A message held for an administrator (virus, failed virus scan, transport rule, over quota). */
export const quarantineFields = {
  mailboxUid: z.string(),
  entryUid: z.string(),
  rawRef: z.string(),
  size: z.number().int().nonnegative(),
  envelopeFrom: z.string(),
  recipient: z.string(),
  from: z.string().default(''),
  subject: z.string().default(''),
  reason: z.enum(['virus', 'virus-scan-failed', 'transport-rule', 'over-quota']),
  detail: z.string().nullable().default(null),
  /** Header block of the message (GET /quarantine/:id/headers). */
  headers: z.string().default(''),
};
export type QuarantineItem = z.infer<z.ZodObject<typeof quarantineFields>>;
export const QuarantineModel = defineModel({
  name: 'quarantine_item',
  table: 'quarantine_items',
  fields: quarantineFields,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['rawRef'] }],
  blobHolders: [{ field: 'rawRef' }],
});

/** Transport rules run once per message before recipients are resolved (Spec: Per-mailbox delivery rules). */
export const transportRuleFields = {
  name: z.string().trim().min(1).max(200),
  enabled: z.boolean().default(true),
  priority: z.number().int().default(100),
  /** Every given condition must match (case-insensitive substring unless a regex is named). */
  match: z
    .object({
      fromContains: z.string().max(320).optional(),
      senderDomain: z.string().max(253).optional(),
      recipientContains: z.string().max(320).optional(),
      subjectContains: z.string().max(998).optional(),
      header: z.object({ name: z.string().min(1).max(100), pattern: z.string().min(1).max(500) }).optional(),
    })
    .strict()
    .default({}),
  action: z.enum(['reject', 'addHeader', 'addRecipient', 'quarantine']),
  headerName: z
    .string()
    .regex(/^[\x21-\x39\x3b-\x7e]+$/, 'must be a header field name')
    .max(100)
    .nullable()
    .default(null),
  headerValue: z
    .string()
    .regex(/^[^\r\n]*$/, 'must be one line')
    .max(998)
    .nullable()
    .default(null),
  recipient: z.string().trim().toLowerCase().max(320).nullable().default(null),
  rejectNotice: z.string().max(2000).nullable().default(null),
};
export type TransportRule = z.infer<z.ZodObject<typeof transportRuleFields>>;
export const TransportRuleModel = defineModel({ name: 'transport_rule', table: 'transport_rules', fields: transportRuleFields });

/** Out-of-office settings of a mailbox (read by delivery; the settings UI writes them). */
export const autoReplyFields = {
  mailboxUid: z.string(),
  enabled: z.boolean().default(false),
  subject: z.string().max(998).default('Out of office'),
  body: z.string().max(100_000).default(''),
  startsAt: z.date().nullable().default(null),
  endsAt: z.date().nullable().default(null),
};
export type AutoReply = z.infer<z.ZodObject<typeof autoReplyFields>>;
export const AutoReplyModel = defineModel({
  name: 'auto_reply',
  table: 'auto_replies',
  fields: autoReplyFields,
  indexes: [{ fields: ['mailboxUid'], unique: true }],
});

/** One per mailbox, sender and UTC day: the uid is derived so a second reply that day is a conflict. */
export const autoReplySentFields = { mailboxUid: z.string(), sender: z.string(), day: z.string() };
export const AutoReplySentModel = defineModel({
  name: 'auto_reply_sent',
  table: 'auto_replies_sent',
  fields: autoReplySentFields,
  indexes: [{ fields: ['mailboxUid'] }],
});

/**
 * Known correspondents of a mailbox (Focused/Other and later key discovery read them). The uid is
 * derived from mailbox and address (correspondentUid), so it is what keeps them unique: the index
 * on the pair is for lookups only (a second unique index would let concurrent first records of
 * one pair fail with a unique violation instead of adding up: PostgreSQL checks only the conflict
 * target's index before inserting).
 */
export const correspondentFields = {
  mailboxUid: z.string(),
  address: z.string(),
  messages: z.number().int().nonnegative().default(0),
  lastAt: z.date(),
};
export const CorrespondentModel = defineModel({
  name: 'correspondent',
  table: 'correspondents',
  fields: correspondentFields,
  indexes: [{ fields: ['mailboxUid', 'address'] }],
});

/** Meeting invitations seen on delivery and what processing them did (lib/pim/invitations). */
export const invitationFields = {
  mailboxUid: z.string(),
  messageUid: z.string().nullable(),
  method: z.string(),
  icalUid: z.string().nullable(),
  organizer: z.string().nullable(),
  ics: z.string(),
  processed: z.boolean().default(false),
  /** created, updated, unchanged, cancelled, reply-applied; or why it was ignored or refused. */
  outcome: z.string().nullable().default(null),
  eventUids: z.array(z.string()).default([]),
};
export const InvitationModel = defineModel({
  name: 'inbound_invitation',
  table: 'inbound_invitations',
  fields: invitationFields,
  indexes: [{ fields: ['mailboxUid', 'processed'] }],
});

/** Control messages consumed on delivery (recall, read receipt, ACME challenge) awaiting their feature. */
export const controlMessageFields = {
  mailboxUid: z.string(),
  kind: z.enum(['recall', 'read-receipt', 'acme-challenge']),
  sender: z.string(),
  data: z.record(z.string(), z.unknown()),
  rawRef: z.string(),
  handled: z.boolean().default(false),
};
export const ControlMessageModel = defineModel({
  name: 'control_message',
  table: 'control_messages',
  fields: controlMessageFields,
  indexes: [{ fields: ['kind', 'handled'] }, { fields: ['rawRef'] }],
  blobHolders: [{ field: 'rawRef', while: { handled: false } }],
});

/** Mail the inbound path hands to the outbound side (NDRs, list relays, auto-replies, reject notices). */
export const outboundHandoffFields = {
  kind: z.enum(['ndr', 'list-relay', 'auto-reply', 'reject-notice', 'forward', 'acme-reply', 'itip-reply', 'receipt']),
  envelopeFrom: z.string(),
  envelopeTo: z.array(z.string()),
  rawRef: z.string(),
  /** queued: waiting for the outbound transport; sent: handed over. */
  state: z.enum(['queued', 'sent', 'failed']).default('queued'),
};
export const OutboundHandoffModel = defineModel({
  name: 'outbound_handoff',
  table: 'outbound_handoffs',
  fields: outboundHandoffFields,
  indexes: [{ fields: ['state'] }, { fields: ['rawRef'] }],
  blobHolders: [{ field: 'rawRef', while: { state: 'queued' } }],
});

export const INGEST_MODELS = [
  IngestEntryModel,
  QuarantineModel,
  TransportRuleModel,
  DistributionListModel,
  AutoReplyModel,
  AutoReplySentModel,
  CorrespondentModel,
  InvitationModel,
  ControlMessageModel,
  OutboundHandoffModel,
];
