import { bareAddress, headerEnd } from './headers.js';

// Spec: Trusting sender verification — while the sender is not verified, relayed distribution-list
// copies and forwarding copies get a rewritten From. Such a copy leaves from our servers: keeping an
// author's From we cannot vouch for would fail the receiver's DMARC check (or pass off a forgery as
// relayed by us). The copy says who wrote it ("Name via list") and where replies go (Reply-To).

const nameOf = (f: string) => f.slice(0, f.indexOf(':')).trim().toLowerCase();

/** Header fields with their folded continuation lines, and the line ending the message uses. */
function split(raw: Buffer): { fields: string[]; body: Buffer; eol: string } {
  const end = headerEnd(raw);
  const eol = raw.indexOf('\r\n') >= 0 && raw.indexOf('\r\n') <= end ? '\r\n' : '\n';
  const head = raw.subarray(0, end).toString('latin1');
  const fields: string[] = [];
  for (const line of head.split(eol)) {
    if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1] += eol + line;
    else if (line) fields.push(line);
  }
  // The body part starts with the blank line that ends the header (added when the message has none).
  return { fields, body: end < raw.length ? raw.subarray(end) : Buffer.from(eol + eol), eol };
}

/** The display name of a From value, as it was written (quoted text unquoted; encoded words kept). */
function displayName(value: string): string {
  const lt = value.indexOf('<');
  const name = (lt > 0 ? value.slice(0, lt) : '').trim();
  return name.startsWith('"') && name.endsWith('"') && name.length > 1 ? name.slice(1, -1).replace(/\\(.)/g, '$1') : name;
}

/** A phrase for "<name> via <via>": a quoted string, RFC 2047 words kept as atoms, 8-bit text encoded. */
function phrase(name: string, via: string): string {
  const quote = (s: string) => `"${s.replace(/[\\"]/g, '\\$&')}"`;
  if (/=\?[^?]+\?[bq]\?[^?]*\?=/i.test(name)) return `${name.replace(/[\r\n]+/g, ' ')} ${quote(`via ${via}`)}`;
  const text = `${name} via ${via}`;
  // Header bytes are latin1 here: reading them back as UTF-8 keeps raw 8-bit names intact.
  const utf8 = Buffer.from(text, 'latin1').toString('utf8');
  return /^[\x20-\x7e]*$/.test(text) ? quote(text) : `=?UTF-8?B?${Buffer.from(utf8, 'utf8').toString('base64')}?=`;
}

export interface FromRewrite {
  /** Who relays the copy, shown after "via" (the list address, the forwarding mailbox). */
  via: string;
  /** The new From address: in a domain we serve and sign for. */
  address: string;
}

/**
 * Rewrites From to `"<author name> via <via>" <address>`; the author goes to Reply-To (unless the
 * message already names one) and X-Original-From. The rest of the message is untouched.
 */
export function rewriteFrom(raw: Buffer, opts: FromRewrite): Buffer {
  const { fields, body, eol } = split(raw);
  const fromField = fields.find((f) => nameOf(f) === 'from');
  const fromValue = fromField
    ? fromField
        .slice(fromField.indexOf(':') + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim()
    : '';
  const author = bareAddress(fromValue);
  const name = displayName(fromValue) || author || 'unknown sender';
  const kept = fields.filter((f) => !['from', 'x-original-from'].includes(nameOf(f)));
  const added = [`From: ${phrase(name, opts.via)} <${opts.address}>`];
  if (fromValue) added.push(`X-Original-From: ${fromValue}`);
  if (author && !kept.some((f) => nameOf(f) === 'reply-to')) added.push(`Reply-To: ${fromValue}`);
  return Buffer.concat([Buffer.from([...added, ...kept].join(eol), 'latin1'), body]);
}
