import { z } from 'zod';
import { ReadReceiptModel } from '../mail/index.js';
import { defineModel } from '../storage/index.js';

/**
 * The Outbox is records (ARCHITECTURE: Queues are records). One per send of a message (uid derived
 * from the message) or relay of an inbound hand-off. States:
 *
 *   queued ──claim──▶ handing(attemptId) ──transport answered──▶ queued (temporary failures, backoff)
 *                                                              └▶ handed ──finish──▶ sent | failed
 *   queued ──scan refused / every recipient refused──▶ failed (the message stays in the Outbox)
 *   handing found by a new claim (the previous holder died mid hand-off):
 *     api provider   → sent again with the same Idempotency-Key (the provider deduplicates)
 *     sendmail       → the MTA log is searched for the Message-ID: found → handed; otherwise → review
 *                      (never sent a second time; the sender gets a notice to check and resend)
 *   sendmail killed (time limit, signal) after reading the whole message: the same rule — the MTA
 *   log decides, else those recipients go to review; killed before reading it all: temporary, retried.
 *   With mail:transport:sendmail:log_path empty (the default) the log cannot decide: every such
 *   interrupted hand-off ends in review. Set it to the MTA's log in production.
 *
 * `attemptId` and `attemptRcpts` are written before the transport is called, so after any crash the
 * record says exactly what may have left. `attemptId` is the idempotency key: derived from the job
 * and the recipients (dispatch.ts attemptKey), the same for every retry of the same hand-off.
 * Scheduled sends (the draft's sendAt) wait in queued with nextAttemptAt = sendAt, the draft still
 * in Drafts; the first pass moves it to the Outbox, or cancels the send when the draft is gone.
 */
export const OUTBOUND_STATES = ['queued', 'handing', 'handed', 'sent', 'failed', 'review'] as const;
export type OutboundState = (typeof OUTBOUND_STATES)[number];

const refusal = z.object({ rcpt: z.string(), reason: z.string(), permanent: z.boolean() });

export const outboundJobFields = {
  kind: z.enum(['message', 'relay']),
  /** message: the sender's mailbox and the message record (Outbox / Sent Items); relay: null. */
  mailboxUid: z.string().nullable().default(null),
  messageUid: z.string().nullable().default(null),
  /** relay: the OutboundHandoff record of the inbound path. */
  handoffUid: z.string().nullable().default(null),
  /** The exact bytes handed over (Bcc removed, DKIM-signed), fixed when queued: retries send the same. */
  rawRef: z.string(),
  size: z.number().int().nonnegative(),
  messageId: z.string().default(''),
  subject: z.string().default(''),
  envelopeFrom: z.string(),
  /** Recipients in served domains: delivered through the inbound path (acceptHandoff), once. */
  localRcpts: z.array(z.string()).default([]),
  localDone: z.boolean().default(false),
  /** External recipients still to hand to the transport. */
  pending: z.array(z.string()).default([]),
  accepted: z.array(z.string()).default([]),
  refused: z.array(refusal).default([]),
  state: z.enum(OUTBOUND_STATES).default('queued'),
  background: z.boolean().default(false),
  /** The outbound scan ran clean (the synchronous route scans before queueing). */
  scanned: z.boolean().default(false),
  attempts: z.number().int().nonnegative().default(0),
  attemptId: z.string().nullable().default(null),
  attemptRcpts: z.array(z.string()).default([]),
  attemptStartedAt: z.date().nullable().default(null),
  nextAttemptAt: z.date(),
  /** The message is in Sent Items and message.sent went out (at the first accepted recipient). */
  filedSent: z.boolean().default(false),
  /** A sendmail hand-off interrupted by a crash and not found in the MTA log: held, never resent. */
  review: z.boolean().default(false),
  /** How many refusals were already reported (events, DSN), so a re-run reports none twice. */
  reported: z.number().int().nonnegative().default(0),
  lastError: z.string().nullable().default(null),
  finishedAt: z.date().nullable().default(null),
};
export type OutboundJob = z.infer<z.ZodObject<typeof outboundJobFields>>;
export type Refused = z.infer<typeof refusal>;

export const OutboundJobModel = defineModel({
  name: 'outbound_job',
  table: 'outbound_jobs',
  fields: outboundJobFields,
  lease: true,
  indexes: [{ fields: ['state', 'nextAttemptAt'] }, { fields: ['messageUid'] }, { fields: ['mailboxUid'] }, { fields: ['rawRef'] }],
  // Until the transport took it (or it failed for good) a retry sends these exact bytes again.
  blobHolders: [{ field: 'rawRef', while: { state: { $in: ['queued', 'handing', 'handed', 'review'] } } }],
});

export const SEND_MODELS = [OutboundJobModel, ReadReceiptModel];
