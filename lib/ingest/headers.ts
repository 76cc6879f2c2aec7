// A light header reader for decisions made before the one full parse (transport rules, the guard's
// logging, quarantine listings). It reads the header block only and never decodes MIME bodies.

export interface HeaderBlock {
  /** The header block as text (up to the first empty line). */
  text: string;
  fields: Array<[string, string]>;
}

export function headerEnd(raw: Buffer): number {
  const crlf = raw.indexOf('\r\n\r\n');
  const lf = raw.indexOf('\n\n');
  if (crlf < 0 && lf < 0) return raw.length;
  if (crlf < 0) return lf;
  if (lf < 0) return crlf;
  return Math.min(crlf, lf);
}

export function readHeaders(raw: Buffer): HeaderBlock {
  const text = raw.subarray(0, Math.min(headerEnd(raw), 256 * 1024)).toString('latin1');
  const fields: Array<[string, string]> = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^[ \t]/.test(line) && fields.length) fields[fields.length - 1][1] += ` ${line.trim()}`;
    else {
      const i = line.indexOf(':');
      if (i > 0) fields.push([line.slice(0, i).trim().toLowerCase(), line.slice(i + 1).trim()]);
    }
  }
  return { text, fields };
}

export function headerValues(h: HeaderBlock, name: string): string[] {
  const n = name.toLowerCase();
  return h.fields.filter(([k]) => k === n).map(([, v]) => v);
}

export function headerValue(h: HeaderBlock, name: string): string {
  return headerValues(h, name)[0] ?? '';
}

/** The bare address inside a From-like value ("Name <a@b>" → a@b), lowercased. */
export function bareAddress(value: string): string {
  const m = /<([^>]*)>/.exec(value);
  return (m ? m[1] : value).trim().replace(/^"|"$/g, '').toLowerCase();
}

export const domainOf = (address: string): string => address.slice(address.lastIndexOf('@') + 1).toLowerCase();

/** Prepends header fields (transport rule "add header"); the rest of the message is untouched. */
export function prependHeaders(raw: Buffer, fields: Array<[string, string]>): Buffer {
  if (!fields.length) return raw;
  const eol = raw.indexOf('\r\n') >= 0 ? '\r\n' : '\n';
  return Buffer.concat([Buffer.from(fields.map(([k, v]) => `${k}: ${v}${eol}`).join(''), 'utf8'), raw]);
}
