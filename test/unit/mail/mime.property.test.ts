// Properties of the MIME handling (lib/mail/messages.ts parseMessage, the one parse per message):
// whatever bytes arrive, the parse answers a message whose fields the store accepts, and headers
// that nodemailer encodes (compose builds drafts with it) come back as they were written.
import fc from 'fast-check';
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { messageFields, parseMessage, type ParsedMessage } from '../../../lib/mail/index.js';

const RUNS = { numRuns: 150 };
const parsedFields = z
  .object(messageFields)
  .pick({
    messageId: true,
    inReplyTo: true,
    references: true,
    threadId: true,
    subject: true,
    from: true,
    fromAddress: true,
    to: true,
    cc: true,
    bcc: true,
    date: true,
    hasAttachments: true,
    attachments: true,
    preview: true,
    smime: true,
  })
  .strict();

const stringsOf = (v: unknown): string[] =>
  typeof v === 'string' ? [v] : v && typeof v === 'object' ? Object.values(v).flatMap(stringsOf) : [];

/** What filing needs of any parse: the model's own validation, a real date, a thread, no NUL anywhere. */
function expectStorable(p: ParsedMessage): void {
  const fields = parsedFields.parse(p.fields);
  expect(Number.isNaN(fields.date.getTime())).toBe(false);
  expect(fields.threadId.length).toBeGreaterThan(0);
  expect(fields.preview.length).toBeLessThanOrEqual(200);
  expect(typeof p.text).toBe('string');
  expect(p.html === null || typeof p.html === 'string').toBe(true);
  // PostgreSQL text refuses NUL; a NUL in a stored field would make the message unfileable there.
  expect(stringsOf({ ...p.fields, text: p.text, html: p.html }).filter((x) => x.includes('\u0000'))).toEqual([]);
}

const build = (mail: object) =>
  new Promise<Buffer>((resolve, reject) => {
    new MailComposer(mail).compile().build((e: Error | null, m: Buffer) => (e ? reject(e) : resolve(m)));
  });

// Structured but broken MIME: real header names with hostile values, multiparts with wrong,
// missing or unterminated boundaries, bad transfer encodings and charsets, truncation anywhere.
const token = fc.stringMatching(/^[A-Za-z][A-Za-z0-9-]{0,15}$/);
const junk = fc.string({ unit: 'binary', maxLength: 80 });
const encodedWord = fc
  .tuple(fc.constantFrom('UTF-8', 'iso-8859-1', 'x-unknown', '', 'utf-7', 'gb2312'), fc.constantFrom('B', 'Q', 'X', ''), junk)
  .map(([cs, enc, text]) => `=?${cs}?${enc}?${text}?=`);
const headerValue = fc.oneof(
  junk,
  encodedWord,
  fc.constant('"unclosed <a@b'),
  fc.constant('a@b, , <>, ;:'),
  fc.constant('\u0000nul\u0000'),
  fc.constant(''),
);
const headerName = fc.oneof(
  fc.constantFrom(
    'From',
    'To',
    'Cc',
    'Bcc',
    'Subject',
    'Date',
    'Message-ID',
    'In-Reply-To',
    'References',
    'Content-Type',
    'Content-Transfer-Encoding',
    'Content-Disposition',
    'MIME-Version',
  ),
  token,
);
const header = fc.tuple(headerName, headerValue).map(([n, v]) => `${n}: ${v}`);
const body = fc.oneof(junk, fc.base64String({ maxLength: 200 }), fc.constant('=ZZ=\n=\n=3'), fc.constant('\u0000\u0000'));
const leaf = fc
  .record({
    type: fc.constantFrom(
      'text/plain',
      'text/html',
      'application/octet-stream',
      'image/png',
      'message/rfc822',
      'application/pkcs7-mime',
      'text/calendar',
    ),
    charset: fc.constantFrom('utf-8', 'iso-8859-1', 'x-bogus', '"', ''),
    cte: fc.constantFrom('base64', 'quoted-printable', '7bit', '8bit', 'x-uuencode', 'bogus'),
    disposition: fc.constantFrom(
      '',
      'attachment; filename="a.txt"',
      "attachment; filename*=UTF-8''%E2%82%AC%ZZ.txt",
      'inline',
      'attachment; filename=',
    ),
    body,
  })
  .map(
    (p) =>
      `Content-Type: ${p.type}; charset=${p.charset}\r\nContent-Transfer-Encoding: ${p.cte}\r\n${p.disposition ? `Content-Disposition: ${p.disposition}\r\n` : ''}\r\n${p.body}`,
  );
const { part } = fc.letrec<{ part: string }>((tie) => ({
  part: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc
      .record({
        boundary: fc.oneof(token, fc.constant('')),
        declared: fc.boolean(),
        closed: fc.boolean(),
        children: fc.array(tie('part'), { maxLength: 3 }),
      })
      .map(
        (m) =>
          `Content-Type: multipart/${m.declared ? 'mixed' : 'alternative'}; boundary="${m.declared ? m.boundary : `${m.boundary}x`}"\r\n\r\npreamble\r\n${m.children.map((c) => `--${m.boundary}\r\n${c}\r\n`).join('')}${m.closed ? `--${m.boundary}--\r\n` : ''}`,
      ),
  ),
}));
const brokenMessage = fc
  .record({
    headers: fc.array(header, { maxLength: 12 }),
    part,
    newline: fc.constantFrom('\r\n', '\n', '\r'),
    cut: fc.option(fc.nat(), { nil: undefined }),
  })
  .map((m) => {
    const text = `${m.headers.join('\r\n')}\r\n${m.part}`.replace(/\r\n/g, m.newline);
    const buf = Buffer.from(text, 'latin1');
    return m.cut === undefined ? buf : buf.subarray(0, m.cut % (buf.length + 1));
  });

describe('MIME handling (fast-check)', () => {
  it('parses arbitrary bytes without throwing, into fields the store accepts', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 2048 }), async (bytes) => {
        expectStorable(await parseMessage(Buffer.from(bytes)));
      }),
      RUNS,
    );
  });

  it('parses structured but broken MIME (bad boundaries, encodings, charsets, truncation) into fields the store accepts', async () => {
    await fc.assert(
      fc.asyncProperty(brokenMessage, async (raw) => {
        expectStorable(await parseMessage(raw));
      }),
      RUNS,
    );
  });

  // Text as people type it: any Unicode but control characters, emoji included. Unstructured
  // headers are compared with runs of white space folded (RFC 5322 unfolding does the same).
  const fold = (s: string) => s.replace(/\s+/g, ' ').trim();
  const bmpOrEmoji = fc
    .string({ unit: 'grapheme', minLength: 1, maxLength: 100 })
    .filter(
      (s) => !/\p{Cc}/u.test(s) && fold(s) !== '' && [...s].every((c) => c.codePointAt(0)! < 0x10000 || /^[\u{1F000}-\u{1FFFF}]$/u.test(c)),
    );

  it('round-trips the subject, display names and attachment names nodemailer encodes (encoded-words, RFC 2231)', async () => {
    await fc.assert(
      fc.asyncProperty(bmpOrEmoji, bmpOrEmoji, bmpOrEmoji, async (subject, name, filename) => {
        const raw = await build({
          from: { name, address: 'sender@example.net' },
          to: [{ name: subject, address: 'rcpt@example.test' }],
          subject,
          text: 'body',
          attachments: [{ filename: `${fold(filename).replace(/[/\\]/g, '_')}.txt`, content: 'x' }],
        });
        const p = await parseMessage(raw);
        expectStorable(p);
        expect(fold(p.fields.subject)).toBe(fold(subject));
        expect(fold(p.fields.from?.name ?? '')).toBe(fold(name));
        expect(p.fields.from?.address).toBe('sender@example.net');
        expect(fold(p.fields.to[0]?.name ?? '')).toBe(fold(subject));
        expect(p.fields.attachments.map((a) => a.filename)).toEqual([`${fold(filename).replace(/[/\\]/g, '_')}.txt`]);
      }),
      RUNS,
    );
  });

  // Known upstream defect (nodemailer 7.0.13 mime-funcs encodeWord): when a B-encoded header is split
  // into several encoded-words, only the emoji high surrogates U+D83C-U+D83E are kept together, so
  // any other supplementary character (CJK Extension B, mathematical alphanumerics) at the split is
  // cut in two and arrives as U+FFFD. Fixed upstream (nodemailer/nodemailer#1838); this test starts
  // failing once the dependency has the fix — then drop it and widen the generator above.
  it.fails('round-trips supplementary characters outside the emoji planes (upstream nodemailer defect)', async () => {
    const subject = `一${'\u{20000}'.repeat(7)}`;
    const p = await parseMessage(await build({ from: 'a@example.net', to: 'b@example.test', subject, text: 'x' }));
    expect(p.fields.subject).toBe(subject);
  });
});
