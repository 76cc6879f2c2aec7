// MIME: lib/mail parseMessage — the one parse of every delivered, imported and drafted message —
// the search document built from it, and displayBody (how mobile sync reads bodies: mailsplit and
// libmime, checked against parseMessage and mailparser). Designed to take any bytes; its one
// refusal is api-106 when mailparser does not finish (lib/mail parseMail's time limit).
import fc from 'fast-check';
import { displayBody, displayBodyByMailparser, parseMessage } from '../../../lib/mail/index.js';
import { searchDocument } from '../../../lib/mail/search.js';
import { address, dateText, encodedWord, eol, fold, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const contentType = fc
  .tuple(
    fc.constantFrom(
      'text/plain',
      'text/html',
      'text/calendar',
      'multipart/mixed',
      'multipart/alternative',
      'multipart/related',
      'multipart/signed',
      'multipart/report',
      'message/rfc822',
      'message/delivery-status',
      'application/pkcs7-mime',
      'application/x-pkcs7-mime',
      'application/octet-stream',
      'image/png',
      'TEXT/PLAIN',
      'text',
      '/',
      '',
    ),
    fc.array(
      fc.oneof(
        fc.constantFrom(
          'charset=utf-8',
          'charset="iso-8859-1"',
          'charset=x-bogus',
          'format=flowed',
          'delsp=yes',
          'smime-type=enveloped-data',
          'smime-type=signed-data',
          'protocol="application/pkcs7-signature"',
          'name="a.txt"',
          "name*=utf-8''%E2%82%AC.txt",
          "filename*0*=utf-8''a%20; filename*1=b.txt",
          'report-type=delivery-status',
          'method=REQUEST',
        ),
        fc.tuple(word, text(20)).map(([k, v]) => `${k}="${v}"`),
      ),
      { maxLength: 4 },
    ),
  )
  .map(([t, ps]) => [t, ...ps].join('; '));

const transferEncoding = fc.constantFrom('7bit', '8bit', 'binary', 'base64', 'quoted-printable', 'x-uuencode', 'BASE64', 'bogus', '');

const body = fc.oneof(
  text(400),
  fc.uint8Array({ maxLength: 300 }).map((u) => Buffer.from(u).toString('base64')),
  fc.uint8Array({ maxLength: 300 }).map((u) =>
    Buffer.from(u)
      .toString('base64')
      .replace(/(.{76})/g, '$1\n'),
  ),
  fc
    .array(fc.constantFrom('=3D', '=\r\n', '=\n', '=ZZ', '=', 'a', '=C3=A9', '=00', ' \t', '\u00e9'), { maxLength: 60 })
    .map((p) => p.join('')),
  fc.constantFrom(
    '<html><body><p>Hi<img src="cid:x"></p></body></html>',
    '<script>alert(1)</script>',
    'begin 644 a.txt\n#86)C\n`\nend\n',
    'BEGIN:VCALENDAR\nEND:VCALENDAR',
  ),
);

const header = fc.oneof(
  fc
    .tuple(
      fc.constantFrom('From', 'To', 'Cc', 'Bcc', 'Reply-To', 'Sender', 'Disposition-Notification-To'),
      fc.array(address, { minLength: 1, maxLength: 3 }),
    )
    .map(([k, a]) => `${k}: ${a.join(', ')}`),
  fc
    .tuple(fc.constantFrom('Subject', 'Comments', 'X-Mailer'), fc.array(fc.oneof(text(30), encodedWord), { maxLength: 4 }))
    .map(([k, p]) => `${k}: ${p.join(' ')}`),
  dateText.map((d) => `Date: ${d}`),
  fc
    .tuple(
      fc.constantFrom('Message-ID', 'In-Reply-To', 'References', 'Content-ID'),
      fc.array(
        fc.oneof(
          fc.tuple(word, word).map(([a, b]) => `<${a}@${b}>`),
          text(20),
        ),
        { maxLength: 4 },
      ),
    )
    .map(([k, v]) => `${k}: ${v.join(' ')}`),
  fc
    .tuple(
      fc.constantFrom('Content-Disposition'),
      fc.constantFrom('inline', 'attachment', 'attachment; filename="x.pdf"', 'inline; filename=', 'bogus'),
    )
    .map(([k, v]) => `${k}: ${v}`),
  fc.tuple(word, text(60)).map(([k, v]) => `${k}: ${v}`),
  text(60),
);

interface Part {
  headers: string[];
  body: string;
}

const part: fc.Arbitrary<Part> = fc.letrec<{ part: Part }>((tie) => ({
  part: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({
      headers: fc
        .tuple(contentType, transferEncoding)
        .map(([ct, te]) => [`Content-Type: ${ct}`, ...(te ? [`Content-Transfer-Encoding: ${te}`] : [])]),
      body,
    }),
    fc
      .tuple(
        fc.constantFrom('mixed', 'alternative', 'related', 'signed', 'report'),
        word,
        fc.array(tie('part'), { maxLength: 4 }),
        fc.boolean(),
        text(20),
      )
      .map(([sub, boundary, parts, closed, preamble]) => ({
        headers: [`Content-Type: multipart/${sub}; boundary="${boundary}"`],
        body: `${preamble}\n${parts.map((p) => `--${boundary}\n${p.headers.join('\n')}\n\n${p.body}\n`).join('')}${closed ? `--${boundary}--\n` : ''}`,
      })),
    fc.tuple(fc.array(header, { maxLength: 4 }), tie('part')).map(([hs, inner]) => ({
      headers: ['Content-Type: message/rfc822'],
      body: `${[...hs, ...inner.headers].join('\n')}\n\n${inner.body}`,
    })),
  ),
})).part;

const message = fc
  .tuple(fc.array(header, { maxLength: 12 }), part, eol, fc.constantFrom(0, 0, 0, 30, 78, 998))
  .map(([hs, p, nl, width]) => {
    const head = [...hs, 'MIME-Version: 1.0', ...p.headers].map((h) => fold(h, width, nl)).join(nl);
    return Buffer.from(`${head}${nl}${nl}${p.body.replace(/\n/g, nl)}`, 'utf8');
  });

const target: FuzzTarget = {
  name: 'mime',
  expected: clientError('api-106'),
  generate: message,
  dictionary: [
    '\r\n\r\n',
    '\n\n',
    'Content-Type: multipart/mixed; boundary=b\r\n',
    '--b\r\n',
    '--b--',
    'Content-Transfer-Encoding: base64\r\n',
    '=?utf-8?B?',
    '?=',
    'charset=',
    'boundary=""',
    'From: ',
    ':',
    '\r\n ',
    '=\r\n',
    'smime-type=enveloped-data',
    'application/pkcs7-mime',
  ],
  maxLength: 128 * 1024,
  async fuzz(data) {
    const parsed = await parseMessage(data);
    const f = parsed.fields;
    check(typeof f.threadId === 'string' && f.threadId.length > 0, 'threadId is set');
    check(f.date instanceof Date && !Number.isNaN(f.date.getTime()), 'date is a valid date');
    check(f.preview.length <= 200, 'preview is at most 200 characters');
    check(new Set(f.attachments.map((a) => a.id)).size === f.attachments.length, 'attachment ids are unique');
    check(
      [...f.to, ...f.cc, ...f.bcc].every((a) => a.address === a.address.toLowerCase() && a.address.length > 0),
      'addresses are lower-case and non-empty',
    );
    check(typeof searchDocument(parsed) === 'string', 'search document is text');
    // The display body (mobile sync) parses the same message as a stream: the same text and HTML.
    if (f.smime !== 'encrypted') {
      const shown = await displayBody(data, 'text');
      check((shown.text ?? '') === parsed.text, 'displayBody gives the text parseMessage gives');
      check(shown.html === parsed.html, 'displayBody gives the HTML parseMessage gives');
      const forHtml = await displayBody(data, 'html');
      const reference = await displayBodyByMailparser(data, 'html');
      check(
        forHtml.text === reference.text && forHtml.html === reference.html,
        'displayBody for an HTML reader gives what mailparser gives',
      );
    }
  },
};
export default target;
