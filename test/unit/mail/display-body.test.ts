// displayBody (lib/mail/display-body.ts) reads bodies without mailparser: each case states the
// text and HTML a reader sees, and that parseMessage stores the same.
import { describe, expect, it } from 'vitest';
import { displayBody, displayBodyByMailparser, parseMessage } from '../../../lib/mail/index.js';

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const head = 'From: a@x.test\nTo: b@x.test\nSubject: s\nMIME-Version: 1.0\n';

async function both(raw: Buffer) {
  const parsed = await parseMessage(raw);
  const forText = await displayBody(raw, 'text');
  const forHtml = await displayBody(raw, 'html');
  expect({ text: forText.text ?? '', html: forText.html }).toEqual({ text: parsed.text, html: parsed.html });
  expect(forHtml).toEqual(await displayBodyByMailparser(raw, 'html'));
  return { forText, forHtml };
}

describe('displayBody', () => {
  it('decodes quoted-printable in a legacy charset', async () => {
    const { forText } = await both(
      crlf(
        `${head}Content-Type: text/plain; charset=iso-8859-1\nContent-Transfer-Encoding: quoted-printable\n\nGr=FC=DFe aus K=F6ln, ein sehr langer Satz der =\nweitergeht.\n`,
      ),
    );
    expect(forText.text).toBe('Grüße aus Köln, ein sehr langer Satz der weitergeht.\n');
  });

  it('decodes base64 UTF-8 HTML and shows it to an HTML reader without text', async () => {
    const html = '<p>Hallo <b>Welt</b> — ✓</p>';
    const { forHtml } = await both(
      crlf(`${head}Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: base64\n\n${Buffer.from(html).toString('base64')}\n`),
    );
    expect(forHtml).toEqual({ text: '', html });
  });

  it('joins format=flowed lines (DelSp) as mailparser does', async () => {
    const { forText } = await both(
      crlf(`${head}Content-Type: text/plain; charset=utf-8; format=flowed; delsp=yes\n\nThis line is soft-bro \nken here.\n> quoted\n`),
    );
    expect(forText.text).toBe('This line is soft-broken here.\n> quoted');
  });

  it('takes one of alternative parts, and mixed text and HTML parts in order', async () => {
    const alternative = await both(
      crlf(`${head}Content-Type: multipart/alternative; boundary=b

--b
Content-Type: text/plain

plain
--b
Content-Type: text/html

<p>rich</p>
--b--
`),
    );
    expect(alternative.forHtml.html).toBe('<p>rich</p>');
    expect(alternative.forText.text).toBe('plain');
    const mixed = await both(
      crlf(`${head}Content-Type: multipart/mixed; boundary=m

--m
Content-Type: text/html

<p>first</p>
--m
Content-Type: text/plain

second
--m
Content-Type: text/plain; name=notes.txt
Content-Disposition: attachment; filename=notes.txt

not shown
--m--
`),
    );
    expect(mixed.forHtml.html).toBe('<p>first</p><br/>\n');
    expect(mixed.forHtml.text).toBe('\nsecond');
  });

  it('leaves an embedded message and HTML a text reader needs as text to mailparser, with the same result', async () => {
    const embedded = await both(
      crlf(`${head}Content-Type: multipart/mixed; boundary=m

--m
Content-Type: text/plain

see below
--m
Content-Type: message/rfc822
Content-Disposition: inline

From: inner@x.test
Subject: inner subject

inner body
--m--
`),
    );
    expect(embedded.forText.text).toContain('Subject: inner subject');
    expect(embedded.forText.text).toContain('inner body');
    const htmlOnly = await both(crlf(`${head}Content-Type: text/html\n\n<p>only <i>html</i></p>\n`));
    expect(htmlOnly.forText.text).toBe('only html');
  });

  it('drops NUL and keeps bytes of an unknown charset readable', async () => {
    const { forText } = await both(
      Buffer.concat([crlf(`${head}Content-Type: text/plain; charset=x-unknown-9\n\na`), Buffer.from([0, 0xc3, 0xa9]), crlf('b\n')]),
    );
    expect(forText.text).toBe('aéb\n');
  });

  it('gives nothing for a message without text', async () => {
    const { forText, forHtml } = await both(crlf(`${head}Content-Type: application/pdf\n\n%PDF-1.4\n`));
    expect(forText).toEqual({ text: null, html: null });
    expect(forHtml).toEqual({ text: null, html: null });
  });
});
