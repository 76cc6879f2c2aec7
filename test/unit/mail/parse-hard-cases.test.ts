// Hand-picked hard cases for the one parse (lib/mail parseMessage): what real mail throws at it.
import { describe, expect, it } from 'vitest';
import { parseMessage } from '../../../lib/mail/index.js';

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const b64 = (b: Buffer | string) => (Buffer.isBuffer(b) ? b : Buffer.from(b)).toString('base64').replace(/.{76}/g, '$&\n');

describe('parseMessage on hard cases', () => {
  it('multipart/alternative inside multipart/mixed inside multipart/related, attachments found at depth', async () => {
    const p = await parseMessage(
      crlf(`From: "Ann" <Ann@Example.ORG>
To: a@x.test, "Group": b@x.test, c@x.test;
Subject: nested
Message-ID: <n1@x>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="outer"

--outer
Content-Type: multipart/related; boundary="rel"

--rel
Content-Type: multipart/alternative; boundary="alt"

--alt
Content-Type: text/plain; charset=utf-8

plain part
--alt
Content-Type: text/html; charset=utf-8

<p>html part <img src="cid:logo@x"></p>
--alt--
--rel
Content-Type: image/png
Content-ID: <logo@x>
Content-Disposition: inline
Content-Transfer-Encoding: base64

${b64('PNGDATA')}
--rel--
--outer
Content-Type: message/rfc822
Content-Disposition: attachment; filename="fwd.eml"

From: inner@x
Subject: inner

inner body
--outer
Content-Type: application/zip; name="a.zip"
Content-Disposition: attachment; filename="a.zip"
Content-Transfer-Encoding: base64

${b64('PK zip bytes')}
--outer--
`),
    );
    expect(p.fields.from).toEqual({ address: 'ann@example.org', name: 'Ann' });
    expect(p.fields.to.map((a) => a.address)).toEqual(['a@x.test', 'b@x.test', 'c@x.test']);
    expect(p.text.trim()).toBe('plain part');
    expect(p.html).toContain('html part');
    const byName = Object.fromEntries(p.fields.attachments.map((a) => [a.contentType, a]));
    expect(byName['image/png']).toMatchObject({ inline: true });
    expect(byName['application/zip']).toMatchObject({ filename: 'a.zip', inline: false, size: 12 });
    expect(byName['message/rfc822']).toMatchObject({ filename: 'fwd.eml', inline: false });
    expect(p.fields.hasAttachments).toBe(true);
  });

  it('decodes non-UTF-8 charsets: ISO-2022-JP, windows-1251, KOI8-R, ISO-8859-15 in quoted-printable', async () => {
    const jp = Buffer.from('\x1b$B$3$s$K$A$O\x1b(B', 'latin1'); // こんにちは in ISO-2022-JP
    const cp1251 = Buffer.from([0xcf, 0xf0, 0xe8, 0xe2, 0xe5, 0xf2]); // Привет
    const koi8 = Buffer.from([0xf0, 0xd2, 0xc9, 0xd7, 0xc5, 0xd4]); // Привет
    const make = (charset: string, body: Buffer, cte = '7bit') =>
      Buffer.concat([
        crlf(
          `From: a@x\nSubject: cs\nMIME-Version: 1.0\nContent-Type: text/plain; charset=${charset}\nContent-Transfer-Encoding: ${cte}\n\n`,
        ),
        body,
      ]);
    expect((await parseMessage(make('iso-2022-jp', jp))).text.trim()).toBe('こんにちは');
    expect((await parseMessage(make('windows-1251', cp1251, '8bit'))).text.trim()).toBe('Привет');
    expect((await parseMessage(make('koi8-r', koi8, '8bit'))).text.trim()).toBe('Привет');
    expect((await parseMessage(make('iso-8859-15', Buffer.from('Preis: 5 =A4 f=FCr alle'), 'quoted-printable'))).text.trim()).toBe(
      'Preis: 5 € für alle',
    );
  });

  it('decodes encoded-words in subject and names (Q and B, split across words and charsets)', async () => {
    const p = await parseMessage(
      crlf(`From: =?ISO-8859-1?Q?Andr=E9?= Pirard <PIRARD@vm1.ulg.ac.be>
To: =?UTF-8?B?0JjQstCw0L0=?= <ivan@x.test>
Subject: =?UTF-8?B?w5xiZXI=?= =?UTF-8?Q?_gr=C3=B6=C3=9Fe?= and =?KOI8-R?B?8NLJ18XU?=
Date: Tue, 3 Mar 2026 10:00:00 +0100

body
`),
    );
    expect(p.fields.subject).toBe('Über größe and Привет');
    expect(p.fields.from).toEqual({ address: 'pirard@vm1.ulg.ac.be', name: 'André Pirard' });
    expect(p.fields.to).toEqual([{ address: 'ivan@x.test', name: 'Иван' }]);
    expect(p.fields.date.toISOString()).toBe('2026-03-03T09:00:00.000Z');
  });

  it('survives broken MIME: no closing boundary, a missing boundary parameter, bad base64, garbage headers, a bad date', async () => {
    const unclosed = await parseMessage(
      crlf(
        `From: a@x\nSubject: unclosed\nContent-Type: multipart/mixed; boundary=zz\n\n--zz\nContent-Type: text/plain\n\nfirst part\n--zz\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=x.pdf\nContent-Transfer-Encoding: base64\n\nJVBERi0x\n`,
      ),
    );
    expect(unclosed.text).toContain('first part');
    expect(unclosed.fields.attachments.map((a) => a.filename)).toEqual(['x.pdf']);
    const noBoundary = await parseMessage(crlf(`From: a@x\nSubject: nob\nContent-Type: multipart/mixed\n\nsome text without parts\n`));
    expect(noBoundary.fields.subject).toBe('nob');
    const badB64 = await parseMessage(
      crlf(`From: a@x\nSubject: b64\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!not base64@@@ aGVsbG8=\n`),
    );
    expect(typeof badB64.text).toBe('string');
    const garbage = await parseMessage(
      crlf(
        `From a@x without colon\n: empty name\nX-Bin: \u00ff\u00fe\nSubject: still here\nDate: not a date at all\nMessage-ID: broken id without brackets\n\nbody\n`,
      ),
    );
    expect(garbage.fields.subject).toBe('still here');
    expect(Number.isNaN(garbage.fields.date.getTime())).toBe(false);
    expect(garbage.fields.threadId).toBeTruthy();
    const headerOnly = await parseMessage(Buffer.from('Subject: only a header'));
    expect(headerOnly.fields.subject).toBe('only a header');
    const empty = await parseMessage(Buffer.alloc(0));
    expect(empty.fields).toMatchObject({ subject: '', from: null, to: [], attachments: [] });
  });

  it('parses a ~25 MB generated attachment with its exact size', async () => {
    const bytes = Buffer.alloc(25 * 1024 * 1024);
    for (let i = 0; i < bytes.length; i += 4096) bytes[i] = i % 251;
    const raw = Buffer.concat([
      crlf(
        'From: big@x\nSubject: big\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nsee attached\n--B\nContent-Type: application/octet-stream\nContent-Disposition: attachment; filename="big.bin"\nContent-Transfer-Encoding: base64\n\n',
      ),
      Buffer.from(bytes.toString('base64').replace(/.{76}/g, '$&\r\n')),
      crlf('\n--B--\n'),
    ]);
    const p = await parseMessage(raw);
    expect(p.fields.attachments).toEqual([
      { id: '1', filename: 'big.bin', safeFilename: 'big.bin', contentType: 'application/octet-stream', size: bytes.length, inline: false },
    ]);
    expect(p.mail.attachments[0].content.equals(bytes)).toBe(true);
    expect(p.text.trim()).toBe('see attached');
  }, 60_000);

  it('S/MIME: enveloped data is ciphertext (no text, no attachments); signed data is marked and its text parsed', async () => {
    const enc = await parseMessage(
      crlf(
        `From: a@x\nSubject: secret\nMIME-Version: 1.0\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data; name=smime.p7m\nContent-Disposition: attachment; filename=smime.p7m\nContent-Transfer-Encoding: base64\n\n${b64('ciphertext with the word platypus')}\n`,
      ),
    );
    expect(enc.fields).toMatchObject({ smime: 'encrypted', attachments: [], hasAttachments: false, preview: '', subject: 'secret' });
    expect(enc.text).toBe('');
    expect(enc.html).toBeNull();
    const xenc = await parseMessage(
      crlf(
        `From: a@x\nSubject: old\nContent-Type: application/x-pkcs7-mime; name=smime.p7m\nContent-Transfer-Encoding: base64\n\n${b64('x')}\n`,
      ),
    );
    expect(xenc.fields.smime).toBe('encrypted');
    const signed = await parseMessage(
      crlf(
        `From: a@x\nSubject: signed\nMIME-Version: 1.0\nContent-Type: multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary=S\n\n--S\nContent-Type: text/plain\n\nsigned words here\n--S\nContent-Type: application/pkcs7-signature; name=smime.p7s\nContent-Disposition: attachment; filename=smime.p7s\nContent-Transfer-Encoding: base64\n\n${b64('sig')}\n--S--\n`,
      ),
    );
    expect(signed.fields.smime).toBe('signed');
    expect(signed.text).toContain('signed words here');
    const opaqueSigned = await parseMessage(
      crlf(
        `From: a@x\nSubject: os\nContent-Type: application/pkcs7-mime; smime-type=signed-data; name=smime.p7m\nContent-Transfer-Encoding: base64\n\n${b64('x')}\n`,
      ),
    );
    expect(opaqueSigned.fields.smime).toBe('signed');
  });
});
