// The address fields of the compose form: what the user typed split into recipients (RFC 5322
// lists through nodemailer's parser, "Name <a@b>", quoted names holding commas, and the semicolons
// Outlook users type), the entry under the caret that autocomplete completes, and reply-all's lists.
import addressparser from 'nodemailer/lib/addressparser/index.js';

export interface Recipient {
  address: string;
  name: string;
}

// What a browser's <input type=email> accepts (HTML's valid e-mail address); the server checks again.
const EMAIL =
  /^[a-zA-Z0-9.!#$%&'*+/=?^_`{|}~-]+@[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?(?:\.[a-zA-Z0-9](?:[a-zA-Z0-9-]{0,61}[a-zA-Z0-9])?)+$/;

/** Positions of the separators (comma or semicolon) outside quoted names and angle brackets. */
function separators(input: string): number[] {
  const at: number[] = [];
  let quoted = false;
  let angle = false;
  for (let i = 0; i < input.length; i++) {
    const c = input[i];
    if (c === '\\' && quoted) i++;
    else if (c === '"') quoted = !quoted;
    else if (!quoted && c === '<') angle = true;
    else if (!quoted && c === '>') angle = false;
    else if (!quoted && !angle && (c === ',' || c === ';')) at.push(i);
  }
  return at;
}

/** The entries of a field, as typed (trimmed, empty ones dropped). */
export function entries(input: string): string[] {
  const cuts = [-1, ...separators(input), input.length];
  return cuts
    .slice(1)
    .map((end, i) => input.slice(cuts[i] + 1, end).trim())
    .filter(Boolean);
}

/** The recipients of a field, each address once (case-insensitive), and the entries that are not addresses. */
export function parseRecipients(input: string): { recipients: Recipient[]; invalid: string[] } {
  const recipients: Recipient[] = [];
  const invalid: string[] = [];
  const seen = new Set<string>();
  for (const entry of entries(input)) {
    const [one, ...more] = addressparser(entry, { flatten: true });
    if (!one || more.length || !EMAIL.test(one.address)) {
      invalid.push(entry);
      continue;
    }
    const key = one.address.toLowerCase();
    if (seen.has(key)) continue;
    seen.add(key);
    recipients.push({ address: one.address, name: one.name });
  }
  return { recipients, invalid };
}

/** A recipient as it is written in a field: the name quoted when it holds characters that separate entries. */
export function formatRecipient(r: Recipient): string {
  if (!r.name) return r.address;
  const name = /[",;<>@()[\]\\:]/.test(r.name) ? `"${r.name.replace(/(["\\])/g, '\\$1')}"` : r.name;
  return `${name} <${r.address}>`;
}

export const formatRecipients = (list: readonly Recipient[]): string => list.map(formatRecipient).join(', ');

/** The entry the caret is in: where it starts and ends in the field and its text (trimmed). */
export function entryAt(input: string, caret: number): { start: number; end: number; text: string } {
  const cuts = separators(input);
  const start = cuts.filter((c) => c < caret).reduce((_, c) => c + 1, 0);
  const end = cuts.find((c) => c >= caret) ?? input.length;
  return { start, end, text: input.slice(start, end).trim() };
}

/** The field with the entry at the caret replaced by a chosen recipient, a separator after it, and where the caret goes. */
export function completeEntry(input: string, caret: number, chosen: Recipient): { value: string; caret: number } {
  const { start, end } = entryAt(input, caret);
  const before = input.slice(0, start).replace(/\s*$/, start > 0 ? ' ' : '');
  const after = input.slice(end).replace(/^[,;]?\s*/, '');
  const head = `${before}${formatRecipient(chosen)}, `;
  return { value: head + after, caret: head.length };
}

/**
 * Reply all: to the sender (or, for a message the user sent, to its recipients again), a copy to everyone
 * else it went to; the user's own addresses left out.
 */
export function replyAllRecipients(
  m: { from: Recipient | null; to: Recipient[]; cc: Recipient[] },
  own: readonly string[],
): { to: Recipient[]; cc: Recipient[] } {
  const mine = new Set(own.map((a) => a.toLowerCase()));
  const taken = new Set<string>();
  const keep = (list: Recipient[]) =>
    list.filter((r) => {
      const key = r.address.toLowerCase();
      if (mine.has(key) || taken.has(key)) return false;
      taken.add(key);
      return true;
    });
  const fromMe = m.from !== null && mine.has(m.from.address.toLowerCase());
  if (fromMe) return { to: keep(m.to), cc: keep(m.cc) };
  const to = keep(m.from ? [m.from] : []);
  return { to, cc: keep([...m.to, ...m.cc]) };
}
