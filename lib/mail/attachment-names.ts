// Attachment names as a client may use them to save a file (docs/SECURITY.md, Attachment names and
// other sender-chosen strings). A message's attachment names are whatever the sender wrote:
// "../../../etc/evil.html", "CON.txt", "invoice\u202Efdp.exe" (shown as "invoiceexe.pdf"), names
// with newlines or a thousand characters. The stored `filename` stays as sent (it is the message's
// data); `safeFilename` is the one to show and to save under.

/** Longest safe name in UTF-8 bytes: under every file system's 255, with room for " (1)". */
export const SAFE_NAME_MAX_BYTES = 200;

/** Windows device names, reserved with any extension ("con.txt") and in any case. */
const RESERVED = /^(con|prn|aux|nul|clock\$|conin\$|conout\$|com[0-9¹²³]|lpt[0-9¹²³])$/i;
/**
 * Removed: control characters (Cc: C0, DEL, C1) and format characters (Cf: the bidi embeddings,
 * overrides and isolates U+202A-U+202E and U+2066-U+2069, the marks U+200E, U+200F, U+061C, zero-width
 * characters, U+FEFF), which reorder or hide what the name shows.
 */
const INVISIBLE = /[\p{Cc}\p{Cf}]/gu;
/** Characters that separate or look like path separators; replaced by "_". */
const SLASH_LIKE = /[\u2044\u2215\u2216\u29F5\u29F8\u29F9\uFE68\uFF0F\uFF3C]/g;
/** Characters Windows refuses in a name. */
const WINDOWS_FORBIDDEN = /[<>:"|?*]/g;

const byteLength = (s: string) => Buffer.byteLength(s, 'utf8');

/** Lone surrogates (not text; a broken UTF-16 name) become U+FFFD, as String.prototype.toWellFormed does. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** Leading dots and spaces (hidden files, "..") and trailing ones (Windows drops them) go. */
const trimEdges = (s: string) => s.replace(/^[.\s]+/u, '').replace(/[.\s]+$/u, '');

/** Cut to SAFE_NAME_MAX_BYTES on a code point boundary, keeping a short extension. */
function truncate(name: string): string {
  if (byteLength(name) <= SAFE_NAME_MAX_BYTES) return name;
  const dot = name.lastIndexOf('.');
  const ext = dot > 0 && name.length - dot <= 16 ? name.slice(dot) : '';
  const room = SAFE_NAME_MAX_BYTES - byteLength(ext);
  let stem = '';
  let used = 0;
  for (const ch of ext ? name.slice(0, dot) : name) {
    const b = byteLength(ch);
    if (used + b > room) break;
    stem += ch;
    used += b;
  }
  return trimEdges(trimEdges(stem) + ext);
}

/**
 * A name safe to show and to save a file under on any common system: the base name only (no "/" or
 * "\", no "." or ".." part), without control, format or bidi characters, without the characters
 * Windows refuses (replaced by "_"), whitespace collapsed to single spaces, no leading dot, no trailing
 * dot or space, never a Windows device name (prefixed with "_"), at most SAFE_NAME_MAX_BYTES bytes.
 * Never empty: `fallback` (itself made safe) when nothing is left. Applying it twice changes nothing.
 */
export function safeFilename(name: string | null | undefined, fallback = 'attachment'): string {
  let s = String(name ?? '')
    .replace(LONE_SURROGATE, '\uFFFD')
    .normalize('NFC');
  s = s
    .replace(/[\t\n\v\f\r\u0085\u2028\u2029]/g, ' ')
    .replace(INVISIBLE, '')
    .replace(SLASH_LIKE, '_');
  s =
    s
      .split(/[/\\]/)
      .map((part) => part.trim())
      .filter((part) => part !== '' && part !== '.' && part !== '..')
      .pop() ?? '';
  s = trimEdges(s.replace(WINDOWS_FORBIDDEN, '_').replace(/\s+/gu, ' '));
  if (RESERVED.test(s.split('.')[0].trimEnd())) s = `_${s}`;
  s = truncate(s);
  if (s) return s;
  return fallback === 'attachment' ? fallback : safeFilename(fallback);
}

/** An attachment as clients get it: the name as sent and the safe one beside it. */
export interface NamedAttachment {
  id: string;
  filename: string;
  safeFilename: string;
}

/** Adds (or recomputes) safeFilename on every attachment of a message record or event payload. */
export function withSafeNames<T extends { attachments?: Array<{ id: string; filename: string }> }>(msg: T): T {
  if (!Array.isArray(msg.attachments) || !msg.attachments.length) return msg;
  return { ...msg, attachments: msg.attachments.map((a) => ({ ...a, safeFilename: safeFilename(a.filename, `attachment-${a.id}`) })) };
}
