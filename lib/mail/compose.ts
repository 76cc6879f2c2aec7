import escapeHtml from 'escape-html';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';
import { checkRecord, type ResourceDecl } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { sanitizeMailHtml } from '../scan/index.js';
import { fileMessage, folderOf, loadRaw, storeRaw, type MessageRecord } from './filing.js';
import { MailboxModel, type Mailbox } from './mailboxes.js';
import { SignatureModel } from './mailbox-items.js';
import { parseMessage, type ParsedMessage } from './messages.js';

// Drafts: the client sends JSON, the server builds the MIME message with nodemailer's MailComposer,
// stores it in the blob store and files it in Drafts with the draft flag. An update replaces the
// raw source: a new message is filed and the old one goes through the same bookkeeping as DELETE.

const addr = z
  .string()
  .trim()
  .toLowerCase()
  .max(320)
  .pipe(z.email({ message: 'must be a plain address' }));
const recipient = z.union([addr, z.object({ address: addr, name: z.string().trim().max(200).default('') }).strict()]);

export const draftBody = z
  .object({
    mailboxUid: z.string().min(1),
    /** The mailbox address or one of its aliases; default: the mailbox address. */
    from: addr.optional(),
    to: z.array(recipient).max(500).default([]),
    cc: z.array(recipient).max(500).default([]),
    bcc: z.array(recipient).max(500).default([]),
    subject: z.string().max(998).default(''),
    text: z.string().max(1_000_000).default(''),
    /** Sanitized before it is stored. */
    html: z.string().max(2_000_000).nullable().default(null),
    replyTo: z.string().min(1).optional().describe('uid of a message of the mailbox this draft answers (In-Reply-To, References, quoting)'),
    forwardOf: z.string().min(1).optional().describe('uid of a message of the mailbox this draft forwards (quoted, its attachments kept)'),
    forwardAs: z
      .enum(['inline', 'attachment'])
      .default('inline')
      .describe(
        'with forwardOf: inline (quoted under a forwarded-message header) or attachment (the original whole, as a message/rfc822 part)',
      ),
    /** A signature uid of the mailbox, or true for its default signature. */
    signature: z.union([z.string().min(1), z.boolean()]).default(false),
    sendAt: z.coerce
      .date()
      .meta({ type: 'string', format: 'date-time' })
      .nullable()
      .optional()
      .describe(
        "scheduled send: POST /api/mail/messages/:id/send keeps the draft in Drafts until this time, then hands it to the send job; null clears it; PUT without it keeps the draft's",
      ),
    keepAttachments: z
      .array(z.string().min(1).max(20))
      .max(1000)
      .optional()
      .describe("PUT only: ids (attachments[].id) of the draft's attachments to keep; absent: all of them"),
    /** PUT only: the version of the draft being replaced. */
    version: z.number().int().positive().optional(),
  })
  .strict()
  .refine((b) => !(b.replyTo && b.forwardOf), { message: 'replyTo and forwardOf exclude each other', path: ['forwardOf'] });
export type DraftBody = z.infer<typeof draftBody>;

export interface DraftAttachment {
  filename: string;
  contentType: string;
  content: Buffer;
}

/** What compose needs from the resource layer (the messages and folders declarations, ACL-checked loads). */
export interface ComposeDecls {
  messages: ResourceDecl;
  folders: ResourceDecl;
  load(ctx: Ctx, decl: ResourceDecl, uid: string, right: 'read' | 'write' | 'delete'): Promise<Record<string, unknown>>;
}

type Addr = { address: string; name: string };
const asAddr = (r: z.infer<typeof recipient>): Addr => (typeof r === 'string' ? { address: r, name: '' } : r);
const fmt = (a: Addr | null) => (a ? (a.name ? `${a.name} <${a.address}>` : a.address) : '');
const prefixed = (prefix: string, subject: string) =>
  new RegExp(`^${prefix}:`, 'i').test(subject.trim()) ? subject : `${prefix}: ${subject}`;
const quotedHtml = (p: ParsedMessage) => (p.html !== null ? sanitizeMailHtml(p.html) : escapeHtml(p.text).replace(/\n/g, '<br>'));

/** The attachments of a stored message with their bytes (to carry them into a new draft); `keep`: only these ids (attachments[].id). */
export function attachmentsOf(parsed: ParsedMessage, keep?: ReadonlySet<string>): DraftAttachment[] {
  return parsed.mail.attachments
    .filter((a, i) => !(a.contentDisposition === 'inline' && a.cid) && (!keep || keep.has(String(i + 1))))
    .map((a, i) => ({
      filename: a.filename ?? `attachment-${i + 1}`,
      contentType: a.contentType || 'application/octet-stream',
      content: a.content,
    }));
}

interface Source {
  msg: MessageRecord;
  raw: Buffer;
  parsed: ParsedMessage;
}

async function source(ctx: Ctx, decls: ComposeDecls, uid: string, mailboxUid: string, path: string): Promise<Source> {
  const msg = (await decls.load(ctx, decls.messages, uid, 'read')) as unknown as MessageRecord;
  if (msg.mailboxUid !== mailboxUid)
    throw invalid('the original message must be in the same mailbox as the draft', [{ path, message: 'other mailbox' }]);
  if (msg.smime === 'encrypted')
    throw invalid('an encrypted message cannot be quoted by the server; the client composes the reply', [{ path, message: 'encrypted' }]);
  const raw = await loadRaw(ctx, msg.blobId);
  return { msg, raw, parsed: await parseMessage(raw) };
}

async function signatureOf(ctx: Ctx, mailboxUid: string, sig: string | boolean): Promise<{ text: string; html: string } | null> {
  if (sig === false) return null;
  const repo = ctx.store.repo<{ mailboxUid: string; text: string; html: string; isDefault: boolean }>(SignatureModel);
  const s = sig === true ? await repo.findOne({ mailboxUid, isDefault: true }) : await repo.get(sig);
  if (!s || s.mailboxUid !== mailboxUid) {
    if (sig === true) return null;
    throw invalid(`no signature ${String(sig)} in this mailbox`, [{ path: 'signature', message: 'unknown signature' }]);
  }
  return { text: s.text, html: s.html };
}

/** A draft's content while it is built from the request, its signature and the message it answers or forwards. */
interface DraftParts {
  text: string;
  html: string | null;
  subject: string;
  to: Addr[];
  attachments: DraftAttachment[];
  inReplyTo?: string;
  references?: string[];
}

/** Returns the draft's From: the request's (the mailbox address or one of its aliases) or the mailbox address. */
function fromOf(body: DraftBody, box: Mailbox): string {
  const from = body.from ?? box.address;
  if (from !== box.address && !box.aliases.includes(from))
    throw invalid(`${from} is not an address of this mailbox`, [{ path: 'from', message: 'not the mailbox address or an alias' }]);
  return from;
}

/** Appends the signature: to the text after the "-- " line, to the HTML (when there is one) in a signature block. */
function appendSignature(parts: DraftParts, sig: { text: string; html: string }): void {
  parts.text = `${parts.text}\n\n-- \n${sig.text}`;
  if (parts.html !== null)
    parts.html = `${parts.html}<div class="signature">${sig.html || escapeHtml(sig.text).replace(/\n/g, '<br>')}</div>`;
}

/** Loads the message the draft answers (replyTo) or forwards (forwardOf), or null when it does neither. */
async function originalOf(ctx: Ctx, decls: ComposeDecls, body: DraftBody, mailboxUid: string): Promise<Source | null> {
  if (body.replyTo) return source(ctx, decls, body.replyTo, mailboxUid, 'replyTo');
  if (body.forwardOf) return source(ctx, decls, body.forwardOf, mailboxUid, 'forwardOf');
  return null;
}

/** Makes the draft a reply: "Re:" subject, the original sender when To is empty, In-Reply-To and References, the original quoted. */
function quoteReply(parts: DraftParts, orig: Source): void {
  const m = orig.msg;
  const when = new Date(m.date).toUTCString();
  parts.subject = parts.subject || prefixed('Re', m.subject);
  if (!parts.to.length && m.from) parts.to.push(m.from);
  if (m.messageId) {
    parts.inReplyTo = m.messageId;
    parts.references = [...m.references, m.messageId];
  }
  parts.text = `${parts.text}\n\nOn ${when}, ${fmt(m.from)} wrote:\n${orig.parsed.text
    .replace(/\r?\n$/, '')
    .split(/\r?\n/)
    .map((l) => `> ${l}`)
    .join('\n')}\n`;
  if (parts.html !== null)
    parts.html = `${parts.html}<p>On ${escapeHtml(when)}, ${escapeHtml(fmt(m.from))} wrote:</p><blockquote type="cite">${quotedHtml(orig.parsed)}</blockquote>`;
}

/** Makes the draft a forward: "Fwd:" subject, References, the original under a forwarded-message header, its attachments kept. */
function quoteForward(parts: DraftParts, orig: Source): void {
  const m = orig.msg;
  const when = new Date(m.date).toUTCString();
  parts.subject = parts.subject || prefixed('Fwd', m.subject);
  if (m.messageId) parts.references = [...m.references, m.messageId];
  const head = [
    '---------- Forwarded message ---------',
    `From: ${fmt(m.from)}`,
    `Date: ${when}`,
    `Subject: ${m.subject}`,
    `To: ${m.to.map(fmt).join(', ')}`,
  ];
  parts.text = `${parts.text}\n\n${head.join('\n')}\n\n${orig.parsed.text}`;
  if (parts.html !== null)
    parts.html = `${parts.html}<blockquote type="cite">${head.map(escapeHtml).join('<br>')}<br><br>${quotedHtml(orig.parsed)}</blockquote>`;
  parts.attachments.push(...attachmentsOf(orig.parsed));
}

/**
 * The message without its Bcc header: a sent message's stored source keeps Bcc (the send job drops it
 * only from what it relays), and a forward of it whole must not show who was copied blind.
 */
function withoutBcc(raw: Buffer): Buffer {
  const text = raw.toString('latin1'); // one char per byte: the rest goes back unchanged
  const blank = /\r?\n\r?\n/.exec(text);
  const end = blank ? blank.index : text.length;
  const head = text.slice(0, end).replace(/^Bcc:[^\n]*(?:\n[ \t][^\n]*)*(?:\n|$)/gim, '');
  return Buffer.from(head + text.slice(end), 'latin1');
}

/** Forwards the original whole: "Fwd:" subject, References, the message as a message/rfc822 attachment named after its subject. */
function attachForward(parts: DraftParts, orig: Source): void {
  const m = orig.msg;
  parts.subject = parts.subject || prefixed('Fwd', m.subject);
  if (m.messageId) parts.references = [...m.references, m.messageId];
  const name = (m.subject.replace(/[\\/:*?"<>|\p{Cc}]+/gu, ' ').trim() || 'message').slice(0, 100);
  parts.attachments.push({ filename: `${name}.eml`, contentType: 'message/rfc822', content: withoutBcc(orig.raw) });
}

/** Builds the MIME source of the finished parts with MailComposer, Bcc kept. */
function composeMime(parts: DraftParts, body: DraftBody, box: Mailbox, from: string): Promise<Buffer> {
  const { html, inReplyTo, references } = parts;
  const mail: Mail.Options = {
    from: { address: from, name: from === box.address ? box.name : '' },
    to: parts.to,
    cc: body.cc.map(asAddr),
    bcc: body.bcc.map(asAddr),
    subject: parts.subject,
    text: parts.text,
    ...(html !== null ? { html } : {}),
    ...(inReplyTo ? { inReplyTo } : {}),
    ...(references ? { references } : {}),
    date: new Date(),
    // Every file is an attachment, a forwarded message too (nodemailer makes message/rfc822 inline, which readers open as part of the body).
    attachments: parts.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
      contentDisposition: 'attachment' as const,
    })),
  };
  const composer = new MailComposer(mail).compile();
  // Bcc stays in a draft (sending needs it); MailComposer drops it unless asked.
  composer.keepBcc = true;
  return composer.build();
}

/** The MIME source of a draft (MailComposer), from the request and what it refers to. */
export async function buildDraft(
  ctx: Ctx,
  decls: ComposeDecls,
  body: DraftBody,
  box: Mailbox & { uid: string },
  kept: DraftAttachment[],
): Promise<Buffer> {
  const from = fromOf(body, box);
  const parts: DraftParts = {
    text: body.text,
    html: body.html === null ? null : sanitizeMailHtml(body.html),
    subject: body.subject,
    to: body.to.map(asAddr),
    attachments: [...kept],
  };
  const sig = await signatureOf(ctx, box.uid, body.signature);
  if (sig) appendSignature(parts, sig);
  const orig = await originalOf(ctx, decls, body, box.uid);
  if (orig && body.replyTo) quoteReply(parts, orig);
  else if (orig && body.forwardAs === 'attachment') attachForward(parts, orig);
  else if (orig) quoteForward(parts, orig);
  return composeMime(parts, body, box, from);
}

/** The mailbox of a new draft: its Drafts folder must be open to the caller for new items (404 otherwise, trusted roles stripped). */
export async function mailboxFor(ctx: Ctx, decls: ComposeDecls, mailboxUid: string): Promise<Mailbox & { uid: string }> {
  // Only "no such folder" means not found: a datastore failure must not be answered as a 404.
  const drafts = await folderOf(ctx.store, mailboxUid, { folderRole: 'drafts' }).catch((e: unknown) => {
    if (e instanceof ApiError && e.code === 'api-107') return null;
    throw e;
  });
  if (!drafts) throw new ApiError('api-107');
  await checkRecord(ctx, decls.folders, drafts as never, 'create');
  const box = await ctx.store.repo<Mailbox>(MailboxModel).get(mailboxUid);
  if (!box) throw new ApiError('api-107');
  return box;
}

/** Stores and files a draft's raw source in Drafts (seen, draft flag; sendAt: its scheduled send time). */
export async function fileDraft(
  ctx: Ctx,
  mailboxUid: string,
  raw: Buffer,
  parsed?: ParsedMessage,
  sendAt: Date | null = null,
): Promise<MessageRecord> {
  return fileMessage(ctx, {
    mailboxUid,
    folderRole: 'drafts',
    raw: await storeRaw(ctx, raw),
    parsed: parsed ?? (await parseMessage(raw)),
    flags: { seen: true, draft: true },
    sendAt,
  });
}

/**
 * A client-made S/MIME message (top-level application/pkcs7-mime, enveloped): only its header is
 * read; the ciphertext is stored as it came and never parsed.
 */
export async function parseEncryptedDraft(raw: Buffer): Promise<ParsedMessage> {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  const end = crlf >= 0 && (lf < 0 || crlf < lf) ? crlf + 4 : lf >= 0 ? lf + 2 : -1;
  if (end < 0)
    throw invalid('an encrypted draft is a whole RFC 5322 message (header, blank line, ciphertext)', [
      { path: 'body', message: 'no header' },
    ]);
  const parsed = await parseMessage(raw.subarray(0, end));
  if (parsed.fields.smime !== 'encrypted')
    throw invalid('an encrypted draft must be application/pkcs7-mime (enveloped-data)', [
      { path: 'body', message: 'not S/MIME ciphertext' },
    ]);
  return { ...parsed, text: '', html: null, fields: { ...parsed.fields, attachments: [], hasAttachments: false, preview: '' } };
}
