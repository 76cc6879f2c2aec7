import { randomUUID } from 'node:crypto';

// The bytes that leave: the stored draft with the headers a transport must not see removed.

function split(raw: Buffer): { head: string; body: Buffer; eol: string } {
  let i = raw.indexOf('\r\n\r\n');
  let eol = '\r\n';
  if (i < 0 || (raw.indexOf('\n\n') >= 0 && raw.indexOf('\n\n') < i)) {
    const j = raw.indexOf('\n\n');
    if (j >= 0 && (i < 0 || j < i)) {
      i = j;
      eol = '\n';
    }
  }
  if (i < 0) return { head: raw.toString('latin1'), body: Buffer.alloc(0), eol: '\r\n' };
  return { head: raw.subarray(0, i).toString('latin1'), body: raw.subarray(i + eol.length * 2), eol };
}

/** Header fields (with their folded continuation lines). */
function fields(head: string, eol: string): string[] {
  const out: string[] = [];
  for (const line of head.split(eol)) {
    if (/^[ \t]/.test(line) && out.length) out[out.length - 1] += eol + line;
    else out.push(line);
  }
  return out;
}

const nameOf = (f: string) => f.slice(0, f.indexOf(':')).trim().toLowerCase();

/**
 * Bcc never travels; Authentication-Results are ours to write (Spec: Trusting sender verification —
 * a forged trusted header must not pass); Message-ID and Date are added when missing. Answers the
 * outgoing bytes and the Message-ID they carry.
 */
export function outgoingRaw(raw: Buffer, domain: string, extra: Record<string, string> = {}): { raw: Buffer; messageId: string } {
  const { head, body, eol } = split(raw);
  const kept = fields(head, eol).filter((f) => !['bcc', 'authentication-results'].includes(nameOf(f)));
  let idField = kept.find((f) => nameOf(f) === 'message-id');
  if (!idField) {
    idField = `Message-ID: <${randomUUID()}@${domain || 'localhost'}>`;
    kept.push(idField);
  }
  if (!kept.some((f) => nameOf(f) === 'date')) kept.push(`Date: ${new Date().toUTCString()}`);
  for (const [k, v] of Object.entries(extra)) kept.unshift(`${k}: ${v}`);
  const messageId = idField
    .slice(idField.indexOf(':') + 1)
    .replace(/\s+/g, '')
    .trim();
  return { raw: Buffer.concat([Buffer.from(kept.join(eol) + eol + eol, 'latin1'), body]), messageId };
}

/** A header value of a raw message (first occurrence, unfolded). */
export function headerOf(raw: Buffer, name: string): string {
  const { head, eol } = split(raw);
  const f = fields(head, eol).find((x) => nameOf(x) === name.toLowerCase());
  return f
    ? f
        .slice(f.indexOf(':') + 1)
        .replace(/\r?\n[ \t]+/g, ' ')
        .trim()
    : '';
}
