import { createHash } from 'node:crypto';
import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import type { AnyRecord } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import { defineModel } from '../storage/index.js';

// Read receipts a mailbox owes (Spec: Properties that hold for records in general — a mailbox has
// receipt settings for internal, federated and external senders): requested receipts are sent or
// not per those settings. When the owner first marks a message seen that asked for one (its
// verified sender's Disposition-Notification-To, kept on delivery as `receiptTo`), one record is
// written; the send job decides with the receipt settings and sends the MDN through the outbound
// path. The uid is derived from the mailbox and the Message-ID, so a message is answered at most
// once however many copies of it the mailbox holds.

export const RECEIPT_STATES = ['pending', 'ask', 'approved', 'sent', 'declined'] as const;

export const readReceiptFields = {
  mailboxUid: z.string(),
  messageUid: z.string(),
  messageId: z.string().nullable().default(null),
  subject: z.string().default(''),
  /** Where the receipt goes (the Disposition-Notification-To address). */
  to: z.string(),
  /**
   * pending: just read, not decided; ask: the settings say ask and the owner has not answered
   * (POST /api/mail/messages/:id/receipt); approved: the owner said send; sent; declined.
   */
  state: z.enum(RECEIPT_STATES).default('pending'),
  /** RFC 8098 disposition mode of the receipt sent: automatic (settings say always) or manual (the owner approved). */
  mode: z.enum(['automatic', 'manual']).nullable().default(null),
  readAt: z.date(),
  sentAt: z.date().nullable().default(null),
};
export type ReadReceipt = z.infer<z.ZodObject<typeof readReceiptFields>>;
export const ReadReceiptModel = defineModel({
  name: 'read_receipt',
  table: 'read_receipts',
  fields: readReceiptFields,
  indexes: [{ fields: ['state'] }, { fields: ['mailboxUid'] }],
});

export const receiptUid = (mailboxUid: string, messageId: string | null, messageUid: string): string =>
  `mdn-${createHash('sha256')
    .update(`${mailboxUid}\0${messageId ?? `uid:${messageUid}`}`)
    .digest('hex')
    .slice(0, 40)}`;

/** The message as it was read: is a receipt owed and not yet noted? Notes it (once). */
export async function noteReceiptOwed(ctx: Pick<Ctx, 'store'>, msg: AnyRecord): Promise<void> {
  const to = typeof msg.receiptTo === 'string' ? msg.receiptTo : '';
  if (!to || msg.draft) return;
  const messageId = typeof msg.messageId === 'string' ? msg.messageId : null;
  try {
    await ctx.store.repo<ReadReceipt>(ReadReceiptModel).create({
      uid: receiptUid(msg.mailboxUid as string, messageId, msg.uid),
      mailboxUid: msg.mailboxUid as string,
      messageUid: msg.uid,
      messageId,
      subject: String(msg.subject ?? ''),
      to,
      state: 'pending',
      mode: null,
      readAt: new Date(),
      sentAt: null,
    });
  } catch (e) {
    if (!(isApiError(e) && e.code === 'api-112')) throw e; // already noted: at most one receipt per message
  }
}
