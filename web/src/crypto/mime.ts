// The MIME of a message made in the browser, for S/MIME (RFC 8551) with protected headers (RFC 9788):
// the inner entity, which is signed and encrypted, carries the real Subject and the addresses; the
// outer message, which the server stores and relays, carries what delivery needs and "[...]" as its
// Subject. Small on purpose: UTF-8 text and HTML in base64, attachments in base64 with RFC 2231
// names, encoded-words for non-ASCII header text. Parsing (reading) is postal-mime's job.
import { b64Lines, random, toB64, toB64url, utf8 } from '../../../lib/keys/client/bytes.js';

export interface Party {
  name?: string;
  address: string;
}

export interface LocalFile {
  name: string;
  type: string;
  bytes: Uint8Array;
}

export interface Composed {
  from: Party;
  to: Party[];
  cc: Party[];
  /** Only on the outer message (delivery needs them; the other recipients must not see them). */
  bcc: Party[];
  subject: string;
  text: string;
  html: string | null;
  files: LocalFile[];
  date: Date;
  messageId: string;
  inReplyTo?: string | null;
  references?: string | null;
}

/** RFC 9788's stand-in for the protected Subject. */
export const HIDDEN_SUBJECT = '[...]';

const ascii = (s: string) => /^[\x20-\x7e]*$/.test(s);

/** Header text: as it is when printable ASCII, else one UTF-8 encoded-word per chunk (RFC 2047). */
export function encodeWords(s: string): string {
  if (ascii(s)) return s;
  const words: string[] = [];
  let chunk = '';
  for (const ch of s) {
    if (utf8(chunk + ch).length > 45) {
      words.push(chunk);
      chunk = '';
    }
    chunk += ch;
  }
  if (chunk) words.push(chunk);
  return words.map((w) => `=?UTF-8?B?${toB64(utf8(w))}?=`).join('\r\n ');
}

/** An address as a header writes it: "Name" <address>, with the name encoded when it needs it. */
export function formatParty(p: Party): string {
  if (!p.name) return p.address;
  const name = ascii(p.name) ? `"${p.name.replace(/["\\]/g, '\\$&')}"` : encodeWords(p.name);
  return `${name} <${p.address}>`;
}

const list = (ps: Party[]) => ps.map(formatParty).join(', ');
const boundary = () => `svc-${toB64url(random(18))}`;
const crlf = (s: string) => s.replace(/\r?\n/g, '\r\n');

/** A filename as Content-Disposition spells it: an ASCII fallback and the RFC 2231 UTF-8 form. */
function filenameParams(name: string): string {
  const fallback = name.replace(/[^\x20-\x7e]|["\\]/g, '_');
  if (ascii(name) && !/["\\]/.test(name)) return `filename="${name}"`;
  const encoded = [...utf8(name)]
    .map((b) =>
      /[A-Za-z0-9.\-_]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`,
    )
    .join('');
  return `filename="${fallback}"; filename*=UTF-8''${encoded}`;
}

const textPart = (type: 'plain' | 'html', body: string) =>
  `Content-Type: text/${type}; charset=utf-8\r\nContent-Transfer-Encoding: base64\r\n\r\n${b64Lines(utf8(crlf(body)))}\r\n`;

function bodyPart(c: Pick<Composed, 'text' | 'html'>): string {
  if (c.html === null) return textPart('plain', c.text);
  const b = boundary();
  return `Content-Type: multipart/alternative; boundary="${b}"\r\n\r\n--${b}\r\n${textPart('plain', c.text)}--${b}\r\n${textPart('html', c.html)}--${b}--\r\n`;
}

function filePart(f: LocalFile): string {
  const type = /^[\w.+-]+\/[\w.+-]+$/.test(f.type) ? f.type : 'application/octet-stream';
  return `Content-Type: ${type}\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; ${filenameParams(f.name)}\r\n\r\n${b64Lines(f.bytes)}\r\n`;
}

/** The headers the inner entity protects (RFC 9788): what the recipients see once it is opened. */
function protectedHeaders(c: Composed): string {
  return [
    `From: ${formatParty(c.from)}`,
    c.to.length ? `To: ${list(c.to)}` : '',
    c.cc.length ? `Cc: ${list(c.cc)}` : '',
    `Subject: ${encodeWords(c.subject)}`,
    `Date: ${c.date.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: ${c.messageId}`,
  ]
    .filter(Boolean)
    .join('\r\n');
}

/** The inner MIME entity: text (and HTML), the files, the protected headers. What is signed and encrypted. */
export function innerEntity(c: Composed): string {
  const headers = protectedHeaders(c);
  const body = bodyPart(c);
  if (!c.files.length) {
    const cut = body.indexOf('\r\n\r\n');
    const [head, rest] = [body.slice(0, cut), body.slice(cut)];
    return `${head.replace(/^Content-Type: ([^\r]*)/, 'Content-Type: $1; protected-headers="v1"')}\r\n${headers}${rest}`;
  }
  const b = boundary();
  const parts = [body, ...c.files.map(filePart)].map((p) => `--${b}\r\n${p}`).join('');
  return `Content-Type: multipart/mixed; boundary="${b}"; protected-headers="v1"\r\n${headers}\r\n\r\n${parts}--${b}--\r\n`;
}

/** The outer message around an S/MIME entity (its own MIME-Version and Content-* headers and base64 body). */
export function outerMessage(c: Composed, smimeEntity: string): string {
  const headers = [
    `From: ${formatParty(c.from)}`,
    c.to.length ? `To: ${list(c.to)}` : '',
    c.cc.length ? `Cc: ${list(c.cc)}` : '',
    c.bcc.length ? `Bcc: ${list(c.bcc)}` : '',
    `Subject: ${HIDDEN_SUBJECT}`,
    `Date: ${c.date.toUTCString().replace('GMT', '+0000')}`,
    `Message-ID: ${c.messageId}`,
    c.inReplyTo ? `In-Reply-To: ${c.inReplyTo}` : '',
    c.references ? `References: ${c.references}` : '',
  ].filter(Boolean);
  return `${headers.join('\r\n')}\r\n${smimeEntity}`;
}

/** A new Message-ID on the sender's domain. */
export const newMessageId = (from: string) => `<${toB64url(random(18))}@${from.slice(from.lastIndexOf('@') + 1) || 'localhost'}>`;

/**
 * A decrypted message whole, to forward as an attachment: its innermost entity when that carries its
 * own headers (RFC 9788 protected headers), else the stored header block `head` (without Bcc, the
 * "[...]" subject and the outer Content-* headers) around it, with the real subject.
 */
export function forwardedMessage(head: string, entity: string, subject: string): string {
  const entityHead = entity.slice(0, Math.max(0, entity.search(/\r?\n\r?\n/)));
  if (/protected-headers="?v1/i.test(entityHead)) return entity;
  const kept = head
    .replace(/\r?\n[ \t]+/g, ' ')
    .split(/\r?\n/)
    .filter((l) => l && !/^(bcc|subject|content-[\w-]+|mime-version):/i.test(l));
  // One header line, whatever the sender encoded into the subject.
  return [...kept, `Subject: ${encodeWords(subject.replace(/[\r\n]+/g, ' '))}`, 'MIME-Version: 1.0', entity].join('\r\n');
}
