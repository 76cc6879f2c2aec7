import { createHash } from 'node:crypto';
import type { AddressObject, EmailAddress, ParsedMail } from 'mailparser';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type Mail from 'nodemailer/lib/mailer/index.js';
import type { Row } from '../api.js';

// The MIME side of SendMail, SmartReply and SmartForward: reading what a device sent, the few
// header fields the server adds to it (Message-ID, From, threading) and, for SmartReply and
// SmartForward without ReplaceMime, the new message built with MailComposer: the device's text with
// the original quoted below, or with the original attached as message/rfc822.

type Parsed = ParsedMail;

/** mailparser is loaded at the first send (as the product does): the protocols daemon rarely needs it. */
let loading: Promise<typeof import('mailparser')> | undefined;
const mailparser = () => (loading ??= import('mailparser'));

/**
 * The device's MIME, parsed; null when it is not a message (no header block) or cannot be parsed in
 * time (mailparser never settles on some malformed structures: 5 s plus 1 ms per KB, as the product allows).
 */
export async function parseMime(raw: Buffer): Promise<Parsed | null> {
  const start = raw.subarray(0, 200).toString('latin1');
  if (!/^[!-9;-~]+:/.test(start) || !/\r?\n\r?\n/.test(raw.toString('latin1'))) return null;
  const { simpleParser } = await mailparser();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => (timer = setTimeout(() => resolve(null), 5000 + Math.ceil(raw.length / 1024))));
  try {
    return await Promise.race([simpleParser(raw, { skipTextToHtml: true, skipTextLinks: true }), late]);
  } catch {
    return null;
  } finally {
    clearTimeout(timer);
  }
}

const addresses = (a: AddressObject | AddressObject[] | undefined): EmailAddress[] =>
  (Array.isArray(a) ? a : a ? [a] : []).flatMap((o) => o.value).filter((x) => Boolean(x.address));

/** Every recipient the device named (To, Cc, Bcc). */
export const recipientsOf = (p: Parsed): string[] => [...addresses(p.to), ...addresses(p.cc), ...addresses(p.bcc)].map((a) => a.address!);

/**
 * An iOS habit: replies to invitations whose answer is still NEEDS-ACTION, sent again and again
 * through SendMail (METHOD:REPLY with PARTSTAT=NEEDS-ACTION, which answers nothing). Such a message
 * is acknowledged and dropped.
 */
export function isNeedsActionReply(p: Parsed): boolean {
  return p.attachments.some((a) => {
    const type = a.contentType.toLowerCase();
    if (type !== 'text/calendar' && type !== 'application/ics') return false;
    const ics = a.content.toString('utf8').replace(/\r?\n[ \t]/g, '');
    return /^METHOD:REPLY\s*$/im.test(ics) && /^ATTENDEE[;:][^\n]*PARTSTAT=NEEDS-ACTION/im.test(ics);
  });
}

/** A Message-ID for a device message without one: the same for every retry of the same ClientId. */
export function derivedMessageId(key: string, domain: string): string {
  return `<eas.${createHash('sha256').update(key).digest('hex').slice(0, 32)}@${domain || 'localhost'}>`;
}

/** S/MIME (signed or encrypted) at the top: the server may not change a byte below the header. */
export function isSealed(p: Parsed): boolean {
  const type = (p.headers.get('content-type') as { value?: string } | undefined)?.value?.toLowerCase() ?? '';
  return type === 'multipart/signed' || type === 'application/pkcs7-mime' || type === 'application/x-pkcs7-mime';
}

/** No CR, LF or NUL in a header value the server writes. */
const clean = (v: string) => v.replace(/[\r\n\0]+/g, ' ').trim();

/** The source with header fields added on top (only those given); the device's bytes are kept as they are. */
export function withHeaders(raw: Buffer, fields: Record<string, string | undefined>): Buffer {
  const nl = raw.indexOf('\n');
  const eol = nl > 0 && raw[nl - 1] === 0x0d ? '\r\n' : '\n';
  const lines = Object.entries(fields)
    .filter(([, v]) => v)
    .map(([k, v]) => `${k}: ${clean(v!)}${eol}`);
  return lines.length ? Buffer.concat([Buffer.from(lines.join(''), 'utf8'), raw]) : raw;
}

/** The original a SmartReply or SmartForward refers to, as the host shows it. */
export interface Original {
  row: Row;
  text: string | null;
  html: string | null;
  raw: Buffer | null;
}

interface Addr {
  address: string;
  name?: string | null;
}
const fmt = (a: unknown) => {
  const x = a as Addr | null;
  return x?.address ? (x.name ? `${x.name} <${x.address}>` : x.address) : '';
};
const escapeHtml = (s: string) => s.replace(/[&<>"]/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;' })[c]!);
const idOf = (row: Row) => (typeof row.messageId === 'string' && row.messageId ? row.messageId : null);
const referencesOf = (row: Row) => (Array.isArray(row.references) ? (row.references as string[]) : []);

/** The threading fields of a reply to `row` (In-Reply-To and References), or of a forward (References). */
export function threading(row: Row, reply: boolean): { inReplyTo?: string; references?: string } {
  const id = idOf(row);
  if (!id) return {};
  return { ...(reply ? { inReplyTo: id } : {}), references: [...referencesOf(row), id].join(' ') };
}

/** Appends HTML before </body> when the document has one. */
const appendHtml = (html: string, extra: string) => {
  const at = html.search(/<\/body\s*>/i);
  return at >= 0 ? html.slice(0, at) + extra + html.slice(at) : html + extra;
};

/** The device's message parts as MailComposer options: addresses (From the mailbox's when it has none), subject, body, attachments, a few headers. */
function optionsOf(p: Parsed, messageId: string, from?: string): Mail.Options {
  const list = (a: AddressObject | AddressObject[] | undefined) => addresses(a).map((x) => ({ address: x.address!, name: x.name }));
  const passed = ['importance', 'priority', 'x-priority', 'disposition-notification-to', 'return-receipt-to'];
  const headers: Record<string, string> = {};
  for (const h of passed) {
    const line = p.headerLines.find((l) => l.key === h);
    if (line) headers[h] = line.line.slice(line.line.indexOf(':') + 1).trim();
  }
  return {
    from: list(p.from)[0] ?? from,
    to: list(p.to),
    cc: list(p.cc),
    bcc: list(p.bcc),
    ...(p.replyTo ? { replyTo: list(p.replyTo) } : {}),
    subject: p.subject ?? '',
    messageId,
    date: p.date ?? new Date(),
    headers,
    text: p.text ?? '',
    ...(typeof p.html === 'string' ? { html: p.html } : {}),
    attachments: p.attachments.map((a) => ({
      filename: a.filename,
      contentType: a.contentType,
      content: a.content,
      ...(a.cid ? { cid: a.cid } : {}),
      contentDisposition: a.contentDisposition === 'inline' ? 'inline' : 'attachment',
    })),
  };
}

async function build(options: Mail.Options): Promise<Buffer> {
  const node = new MailComposer(options).compile();
  // Bcc stays in the message filed as a draft: the send path reads its recipients there and drops it on the way out.
  node.keepBcc = true;
  return node.build();
}

/** SmartReply: the device's message with the original quoted below it (text and, when the device wrote HTML, HTML). */
export function buildReply(p: Parsed, messageId: string, orig: Original, from?: string): Promise<Buffer> {
  const o = optionsOf(p, messageId, from);
  const when = new Date(orig.row.date as string).toUTCString();
  const who = fmt(orig.row.from);
  const thread = threading(orig.row, true);
  if (orig.text !== null) {
    const quoted = orig.text
      .replace(/\r?\n$/, '')
      .split(/\r?\n/)
      .map((l) => `> ${l}`)
      .join('\n');
    o.text = `${String(o.text).replace(/\s+$/, '')}\n\nOn ${when}, ${who} wrote:\n${quoted}\n`;
    if (typeof o.html === 'string') {
      const body = orig.html ?? escapeHtml(orig.text).replace(/\n/g, '<br>');
      o.html = appendHtml(o.html, `<p>On ${escapeHtml(when)}, ${escapeHtml(who)} wrote:</p><blockquote type="cite">${body}</blockquote>`);
    }
  }
  return build({
    ...o,
    inReplyTo: p.inReplyTo ?? thread.inReplyTo,
    references: p.references ?? thread.references,
  });
}

/** SmartForward: the device's message with the original attached whole (message/rfc822). */
export function buildForward(p: Parsed, messageId: string, orig: Original, from?: string): Promise<Buffer> {
  const o = optionsOf(p, messageId, from);
  const name = `${
    String(orig.row.subject ?? '')
      .replace(/[\\/:*?"<>|\r\n]+/g, ' ')
      .trim() || 'message'
  }.eml`;
  const attachments = [...(o.attachments ?? [])];
  if (orig.raw) attachments.push({ filename: name, contentType: 'message/rfc822', content: orig.raw, contentDisposition: 'attachment' });
  return build({ ...o, attachments, references: p.references ?? threading(orig.row, false).references });
}
