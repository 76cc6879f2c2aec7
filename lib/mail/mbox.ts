// mbox in the mboxrd variant, for every mbox the product writes or reads (mailbox export and import,
// escrow matter exports): every line of a message that starts with zero or more '>' and then
// "From " gets one more '>' on the way out and loses one on the way in, so the round trip gives the
// raw message back byte for byte (CRLF line ends included; S/MIME ciphertext is never touched).

const FROM = Buffer.from('From ');
const NL = 0x0a;
const GT = 0x3e;

const DAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];

/** The separator line: "From <sender> <asctime date>\n". */
export function fromLine(sender: string, date: Date): Buffer {
  const d = Number.isNaN(date.getTime()) ? new Date(0) : date;
  const p = (n: number) => String(n).padStart(2, '0');
  const asctime = `${DAYS[d.getUTCDay()]} ${MONTHS[d.getUTCMonth()]} ${String(d.getUTCDate()).padStart(2, ' ')} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())} ${d.getUTCFullYear()}`;
  const who = /^[^\s@]+@[^\s@]+$/.test(sender) ? sender : 'MAILER-DAEMON';
  return Buffer.from(`From ${who} ${asctime}\n`);
}

/** True when the line starting at `at` is ">*From ". */
function quotedFrom(buf: Buffer, at: number): boolean {
  let i = at;
  while (i < buf.length && buf[i] === GT) i++;
  return buf.length - i >= 5 && buf.compare(FROM, 0, 5, i, i + 5) === 0;
}

/** The message with one more '>' before every line that starts with ">*From ". */
export function mboxrdQuote(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  let start = 0;
  for (let at = 0; at < raw.length;) {
    if (quotedFrom(raw, at)) {
      parts.push(raw.subarray(start, at), Buffer.from('>'));
      start = at;
    }
    const nl = raw.indexOf(NL, at);
    if (nl < 0) break;
    at = nl + 1;
  }
  parts.push(raw.subarray(start));
  return Buffer.concat(parts);
}

/** Undoes mboxrdQuote: one '>' less before every line that starts with ">+From ". */
export function mboxrdUnquote(quoted: Buffer): Buffer {
  const parts: Buffer[] = [];
  let start = 0;
  for (let at = 0; at < quoted.length;) {
    if (quoted[at] === GT && quotedFrom(quoted, at)) {
      parts.push(quoted.subarray(start, at));
      start = at + 1;
    }
    const nl = quoted.indexOf(NL, at);
    if (nl < 0) break;
    at = nl + 1;
  }
  parts.push(quoted.subarray(start));
  return Buffer.concat(parts);
}

/** One message as an mbox entry: separator, quoted message, a line end, one blank line. */
export function mboxEntry(raw: Buffer, sender: string, date: Date): Buffer {
  const parts: Buffer[] = [fromLine(sender, date), mboxrdQuote(raw)];
  if (raw.length && raw[raw.length - 1] !== NL) parts.push(Buffer.from('\n'));
  parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}

export type MboxItem = { raw: Buffer } | { error: string; size: number };

/**
 * Splits an mbox stream into messages without holding more than one message in memory. A message
 * larger than maxBytes is reported as an error item (its bytes are skipped, the rest goes on).
 * Throws when the input does not start with a "From " line (not an mbox file).
 */
export async function* splitMbox(input: AsyncIterable<Buffer | string>, maxBytes: number): AsyncGenerator<MboxItem> {
  let pending: Buffer = Buffer.alloc(0);
  let lineStart = true; // whether the bytes in `pending` begin a line
  let started = false;
  let parts: Buffer[] = [];
  let size = 0;
  let oversize = false;

  const finish = (): MboxItem | null => {
    if (!started) return null;
    if (oversize) return { error: `larger than mail:mailbox_import:max_message_bytes (${maxBytes} bytes)`, size };
    let raw = Buffer.concat(parts, size);
    // The blank line before the next separator belongs to the mbox, not to the message.
    if (raw.length && raw[raw.length - 1] === NL) raw = raw.subarray(0, raw.length - 1);
    return { raw };
  };
  const begin = () => {
    parts = [];
    size = 0;
    oversize = false;
    started = true;
  };
  const add = (line: Buffer) => {
    size += line.length;
    if (oversize) return;
    if (size > maxBytes) {
      oversize = true;
      parts = [];
      return;
    }
    parts.push(line);
  };
  /** One whole line (with its \n), or the head of an overlong line (atStart false for the rest). */
  function* line(l: Buffer, atStart: boolean): Generator<MboxItem> {
    if (atStart && l.length >= 5 && l.compare(FROM, 0, 5, 0, 5) === 0) {
      const done = finish();
      if (done) yield done;
      begin();
      return;
    }
    if (!started) {
      if (atStart && /^\s*$/.test(l.toString('latin1'))) return;
      throw new Error('not an mbox file: it does not start with a "From " line');
    }
    add(atStart && l[0] === GT && quotedFrom(l, 0) ? l.subarray(1) : l);
  }

  for await (const chunk of input) {
    pending = pending.length ? Buffer.concat([pending, Buffer.from(chunk)]) : Buffer.from(chunk);
    let at = 0;
    for (let nl = pending.indexOf(NL, at); nl >= 0; nl = pending.indexOf(NL, at)) {
      yield* line(pending.subarray(at, nl + 1), lineStart);
      lineStart = true;
      at = nl + 1;
    }
    pending = pending.subarray(at);
    // An endless line (binary junk) must not grow without bound: pass its head on now.
    if (pending.length > 65_536) {
      yield* line(Buffer.from(pending), lineStart);
      lineStart = false;
      pending = Buffer.alloc(0);
    }
  }
  if (pending.length) yield* line(Buffer.from(pending), lineStart);
  const last = finish();
  if (last) yield last;
}
