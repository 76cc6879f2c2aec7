import { createHash } from 'node:crypto';
import type { AddressObject, ParsedMail, simpleParser } from 'mailparser';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { defineModel, type Row } from '../storage/index.js';
import { safeFilename } from './attachment-names.js';
import { mailparser } from './mime-parser.js';

const address = z.object({ address: z.string(), name: z.string() });

export const messageFields = {
  mailboxUid: z.string(),
  folderUid: z.string(),
  /** sha256 of the raw RFC 5322 source in the blob store (shared by every copy). */
  blobId: z.string(),
  size: z.number().int().nonnegative(),
  messageId: z.string().nullable().default(null),
  inReplyTo: z.string().nullable().default(null),
  references: z.array(z.string()).default([]),
  /** The Message-ID that starts the conversation (References[0], else In-Reply-To, else its own). */
  threadId: z.string(),
  subject: z.string().default(''),
  from: address.nullable().default(null),
  /** Lower-cased sender address, for filters and search. */
  fromAddress: z.string().default(''),
  to: z.array(address).default([]),
  cc: z.array(address).default([]),
  bcc: z.array(address).default([]),
  date: z.date(),
  seen: z.boolean().default(false),
  flagged: z.boolean().default(false),
  answered: z.boolean().default(false),
  forwarded: z.boolean().default(false),
  draft: z.boolean().default(false),
  labels: z.array(z.string()).default([]),
  focused: z.enum(['focused', 'other']).nullable().default(null),
  hasAttachments: z.boolean().default(false),
  /**
   * filename is the name as the sender wrote it (it may be "../../x.html", hold control characters or
   * a Windows device name); safeFilename is the one to show and to save under (lib/mail/attachment-names.ts).
   * Records filed before safeFilename was stored get it from the resource's view.
   */
  attachments: z
    .array(
      z.object({
        id: z.string(),
        filename: z.string(),
        safeFilename: z.string(),
        contentType: z.string(),
        size: z.number(),
        inline: z.boolean(),
      }),
    )
    .default([]),
  /** Start of the plain text (never for encrypted mail). */
  preview: z.string().default(''),
  /** S/MIME: encrypted mail is stored as ciphertext and never parsed or indexed. */
  smime: z.enum(['encrypted', 'signed']).nullable().default(null),
  /** Idempotency key of the delivery that filed it (unique per mailbox). */
  ingestKey: z.string().nullable().default(null),
  /**
   * Read receipts: where a receipt is owed once the owner reads this message — the verified
   * sender's Disposition-Notification-To, set on delivery (Spec: Trusting sender verification).
   */
  receiptTo: z.string().nullable().default(null),
  /**
   * Delivered mail whose sender was verified (the trusted Authentication-Results header: Spec:
   * Trusting sender verification) — what Safe Senders needs before a reader's page loads the
   * sender's remote images by itself.
   */
  senderVerified: z.boolean().default(false),
  /** Sent messages: read receipts that came back for this message (recorded on arrival, never filed). */
  receipts: z.array(z.object({ from: z.string(), disposition: z.string(), at: z.string() /* ISO time: a JSON field */ })).default([]),
  /** Drafts: scheduled send — POST /send hands the draft to the send job at this time (Spec: Outbound message, row 3). */
  sendAt: z.date().nullable().default(null),
};

export const MessageModel = defineModel({
  name: 'message',
  table: 'messages',
  fields: messageFields,
  indexes: [
    { fields: ['folderUid', 'date'] },
    // A folder walked in uid order (mobile sync's fill and change keys, lib/plugins/caller-items.ts)
    // without sorting the whole folder for every page.
    { fields: ['folderUid', 'uid'] },
    { fields: ['mailboxUid', 'threadId'] },
    { fields: ['mailboxUid', 'ingestKey'], unique: true },
    { fields: ['blobId'] },
    { fields: ['mailboxUid', 'date'] },
    // Mailbox import skips duplicates by Message-ID (lib/lifecycle/import-job.ts).
    { fields: ['mailboxUid', 'messageId'] },
  ],
  // Search documents: subject, addresses, plain text of unencrypted bodies (lib/mail/search.ts).
  fullText: true,
  // Search filters "to" (To or Cc) and "label" are store queries on these, exact at any size.
  valueIndexes: [
    {
      name: 'recipients',
      from: ['to', 'cc'],
      scope: 'mailboxUid',
      values: (m) =>
        [...((m.to ?? []) as Array<{ address: string }>), ...((m.cc ?? []) as Array<{ address: string }>)].map((a) =>
          a.address.toLowerCase(),
        ),
    },
    { name: 'labels', from: ['labels'], scope: 'mailboxUid', values: (m) => (m.labels ?? []) as string[] },
  ],
});

export type Message = z.infer<z.ZodObject<typeof messageFields>>;
/** A stored message: its fields and the record's uid, version and timestamps. */
export type MessageRecord = Row<Message>;

/** What one parse of a raw message yields: the stored fields plus the text that search indexes. */
export interface ParsedMessage {
  fields: Omit<
    Message,
    | 'mailboxUid'
    | 'folderUid'
    | 'blobId'
    | 'size'
    | 'seen'
    | 'flagged'
    | 'answered'
    | 'forwarded'
    | 'draft'
    | 'labels'
    | 'focused'
    | 'ingestKey'
    | 'receiptTo'
    | 'senderVerified'
    | 'receipts'
    | 'sendAt'
  >;
  /** Plain text of unencrypted bodies (for search and filter rules); empty for S/MIME ciphertext. */
  text: string;
  html: string | null;
  headers: ParsedMail['headers'];
  /** The mailparser result, for callers that need more (delivery rules). */
  mail: ParsedMail;
}

/**
 * NUL never reaches a stored field: PostgreSQL text refuses it (SQLSTATE 22021), so one NUL in a
 * subject, a name or the body would make a message impossible to file. Anyone can send one.
 */
export const noNul = (s: string) => (s.includes('\u0000') ? s.replaceAll('\u0000', '') : s);

const addrs = (a: AddressObject | AddressObject[] | undefined) =>
  (Array.isArray(a) ? a : a ? [a] : [])
    .flatMap((o) => o.value)
    .flatMap(function flat(v): Array<{ address: string; name: string }> {
      return v.group ? v.group.flatMap(flat) : [{ address: noNul(v.address ?? '').toLowerCase(), name: noNul(v.name ?? '') }];
    })
    .filter((v) => v.address);

function smimeKind(mail: ParsedMail): 'encrypted' | 'signed' | null {
  const ct = mail.headers.get('content-type') as { value?: string; params?: Record<string, string> } | undefined;
  const type = ct?.value?.toLowerCase() ?? '';
  const smimeType = ct?.params?.['smime-type']?.toLowerCase();
  if (type === 'application/pkcs7-mime' || type === 'application/x-pkcs7-mime') return smimeType === 'signed-data' ? 'signed' : 'encrypted';
  if (type === 'multipart/signed' && /pkcs7-signature/i.test(ct?.params?.protocol ?? '')) return 'signed';
  return null;
}

const cleanId = (v: string | undefined) => (v ? noNul(v).trim() || null : null);

/**
 * mailparser with a time limit. On some malformed structures (an inline message/rfc822 part without
 * a body) its promise never settles — found by test/fuzz/targets/mime.ts; the ingest worker would
 * wait on it forever and file nothing more. A parse unfinished after 5 s plus 1 ms per KB is refused
 * (api-106), so the entry fails and is retried instead.
 */
export function parseMail(raw: Buffer, options: Parameters<typeof simpleParser>[1] = {}): Promise<ParsedMail> {
  return withinParseLimit(raw, () => mailparser().then((m) => m.simpleParser(raw, options)));
}

/** `parse` of `raw`, refused with api-106 when it has not finished after 5 s plus 1 ms per KB (see parseMail). */
export function withinParseLimit<T>(raw: Buffer, parse: () => Promise<T>): Promise<T> {
  const limitMs = 5000 + Math.ceil(raw.length / 1024);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new ApiError('api-106', `The message cannot be parsed: the MIME parser did not finish within ${limitMs} ms`)),
      limitMs,
    );
    parse()
      .then(resolve, reject)
      .finally(() => clearTimeout(timer));
  });
}

/** The one parse per message (TESTING.md, Load and benchmarks: parsing is the ingest ceiling — never parse twice). */
export async function parseMessage(raw: Buffer): Promise<ParsedMessage> {
  return fromParsedMail(await parseMail(raw, { skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: false }), raw);
}

/** The stored fields of a message already parsed by mailparser (no second parse). */
export function fromParsedMail(mail: ParsedMail, raw: Buffer): ParsedMessage {
  const smime = smimeKind(mail);
  const references = (Array.isArray(mail.references) ? mail.references : mail.references ? [mail.references] : [])
    .map((r) => noNul(r).trim())
    .filter(Boolean);
  const messageId = cleanId(mail.messageId);
  const inReplyTo = cleanId(mail.inReplyTo);
  const threadId = references[0] ?? inReplyTo ?? messageId ?? `<${createHash('sha256').update(raw).digest('hex').slice(0, 32)}@svcmail>`;
  const from = addrs(mail.from)[0] ?? null;
  const attachments =
    smime === 'encrypted'
      ? []
      : mail.attachments.map((a, i) => ({
          id: String(i + 1),
          filename: noNul(a.filename ?? `attachment-${i + 1}`),
          safeFilename: safeFilename(a.filename, `attachment-${i + 1}`),
          contentType: noNul(a.contentType || 'application/octet-stream'),
          size: a.size,
          inline: a.contentDisposition === 'inline' && Boolean(a.cid),
        }));
  const text = smime === 'encrypted' ? '' : noNul(mail.text ?? '');
  return {
    fields: {
      messageId,
      inReplyTo,
      references,
      threadId,
      subject: noNul(mail.subject ?? ''),
      from,
      fromAddress: from?.address ?? '',
      to: addrs(mail.to),
      cc: addrs(mail.cc),
      bcc: addrs(mail.bcc),
      date: mail.date && !Number.isNaN(mail.date.getTime()) ? mail.date : new Date(),
      hasAttachments: attachments.some((a) => !a.inline),
      attachments,
      preview: text.replace(/\s+/g, ' ').trim().slice(0, 200),
      smime,
    },
    text,
    html: smime === 'encrypted' ? null : typeof mail.html === 'string' ? noNul(mail.html) : null,
    headers: mail.headers,
    mail,
  };
}
