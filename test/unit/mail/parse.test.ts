// The one parse per message (lib/mail parseMessage) on hand-made hard cases (the real-world corpus
// is corpus.test.ts).
import { describe, expect, it } from 'vitest';
import { parseMessage } from '../../../lib/mail/index.js';
import { searchDocument } from '../../../lib/mail/search.js';

const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));

describe('parseMessage on hard cases', () => {
  it('multipart/alternative: text for preview and search, HTML kept, no attachments', async () => {
    const p = await parseMessage(
      crlf(`From: "Ann Example" <Ann@Example.ORG>
To: alice@example.test, "Bob" <bob@example.test>
Cc: carol@example.test
Bcc: dave@example.test
Subject: alt
Date: Tue, 10 Nov 2026 09:30:00 +0100
Message-ID: <alt@example.org>
MIME-Version: 1.0
Content-Type: multipart/alternative; boundary="x"

--x
Content-Type: text/plain; charset=utf-8

plain words here
--x
Content-Type: text/html; charset=utf-8

<p>html words <b>here</b></p>
--x--
`),
    );
    expect(p.fields).toMatchObject({
      subject: 'alt',
      from: { address: 'ann@example.org', name: 'Ann Example' },
      fromAddress: 'ann@example.org',
      to: [
        { address: 'alice@example.test', name: '' },
        { address: 'bob@example.test', name: 'Bob' },
      ],
      cc: [{ address: 'carol@example.test' }],
      bcc: [{ address: 'dave@example.test' }],
      messageId: '<alt@example.org>',
      threadId: '<alt@example.org>',
      hasAttachments: false,
      attachments: [],
      preview: 'plain words here',
      smime: null,
    });
    expect(p.fields.date.toISOString()).toBe('2026-11-10T08:30:00.000Z');
    expect(p.html).toContain('<b>here</b>');
    expect(searchDocument(p)).toContain('plain words here');
    expect(searchDocument(p)).toContain('Bob bob@example.test');
    expect(searchDocument(p)).not.toContain('<b>');
  });

  it('nested multipart (mixed > related > alternative) lists the real attachment and not the inline image', async () => {
    const p = await parseMessage(
      crlf(`From: a@example.org
To: b@example.org
Subject: nested
In-Reply-To: <parent@example.org>
References: <root@example.org> <parent@example.org>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="m"

--m
Content-Type: multipart/related; boundary="r"

--r
Content-Type: multipart/alternative; boundary="a"

--a
Content-Type: text/plain

see the logo
--a
Content-Type: text/html

<img src="cid:logo@x">
--a--
--r
Content-Type: image/png
Content-ID: <logo@x>
Content-Disposition: inline
Content-Transfer-Encoding: base64

iVBORw0KGgo=
--r--
--m
Content-Type: application/zip; name="files.zip"
Content-Disposition: attachment; filename="files.zip"
Content-Transfer-Encoding: base64

UEsDBAo=
--m--
`),
    );
    expect(p.fields.threadId).toBe('<root@example.org>');
    expect(p.fields.inReplyTo).toBe('<parent@example.org>');
    expect(p.fields.references).toEqual(['<root@example.org>', '<parent@example.org>']);
    expect(p.fields.attachments.map((a) => [a.filename, a.contentType, a.inline])).toEqual([
      ['attachment-1', 'image/png', true],
      ['files.zip', 'application/zip', false],
    ]);
    expect(p.fields.hasAttachments).toBe(true);
    expect(p.text.trim()).toBe('see the logo');
  });

  it('non-UTF-8 charsets and encoded-words decode to the right text', async () => {
    const p = await parseMessage(
      Buffer.concat([
        crlf(`From: =?ISO-8859-1?Q?J=F6rg_M=FCller?= <jm@example.de>
To: =?KOI8-R?B?98HTyczJyg==?= <v@example.ru>
Subject: =?UTF-8?B?w4RwZmVs?= und =?windows-1252?Q?=80uro?=
 =?UTF-8?Q?_und_mehr?=
MIME-Version: 1.0
Content-Type: text/plain; charset=Shift_JIS
Content-Transfer-Encoding: 8bit

`),
        Buffer.from([0x82, 0xb1, 0x82, 0xf1, 0x82, 0xc9, 0x82, 0xbf, 0x82, 0xcd]),
        crlf('\n'),
      ]),
    );
    expect(p.fields.from).toEqual({ address: 'jm@example.de', name: 'Jörg Müller' });
    expect(p.fields.to[0].name).toBe('Василий');
    expect(p.fields.subject).toBe('Äpfel und €uro und mehr');
    expect(p.text.trim()).toBe('こんにちは');
  });

  it('broken MIME (no closing boundary, bad base64, headerless, garbage bytes) does not crash', async () => {
    const cases = [
      'Subject: open\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="q"\n\n--q\nContent-Type: text/plain\n\nnever closed\n',
      'Subject: b64\nContent-Type: text/plain\nContent-Transfer-Encoding: base64\n\n!!!not*base64###\n',
      'just a body without any header at all\n',
      'Subject no colon here\nDate: not a date\nFrom: <<<>>>\n\nbody\n',
    ].map(crlf);
    cases.push(Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 37) % 256)));
    for (const c of cases) {
      const p = await parseMessage(c);
      expect(Number.isNaN(p.fields.date.getTime())).toBe(false);
      expect(typeof p.fields.subject).toBe('string');
    }
    expect((await parseMessage(cases[0])).text).toContain('never closed');
  });

  it('a ~25 MB attachment is listed with its size', async () => {
    const data = Buffer.alloc(25 * 1024 * 1024, 7);
    const b64 = data.toString('base64').replace(/.{76}/g, '$&\r\n');
    const raw = Buffer.concat([
      crlf(
        'From: big@example.org\nTo: a@example.test\nSubject: huge\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary="h"\n\n--h\nContent-Type: text/plain\n\nsee attached\n--h\nContent-Type: application/octet-stream; name="big.bin"\nContent-Disposition: attachment; filename="big.bin"\nContent-Transfer-Encoding: base64\n\n',
      ),
      Buffer.from(b64),
      crlf('\n--h--\n'),
    ]);
    const p = await parseMessage(raw);
    expect(p.fields.attachments).toEqual([
      { id: '1', filename: 'big.bin', safeFilename: 'big.bin', contentType: 'application/octet-stream', size: data.length, inline: false },
    ]);
    expect(p.text.trim()).toBe('see attached');
  }, 60_000);

  it('S/MIME: enveloped data is marked encrypted, never parsed nor indexed; signed mail keeps its text', async () => {
    const enc = await parseMessage(
      crlf(`From: s@example.org
To: a@example.test
Subject: sealed
MIME-Version: 1.0
Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"
Content-Disposition: attachment; filename="smime.p7m"
Content-Transfer-Encoding: base64

${Buffer.from('secretword secretword').toString('base64')}
`),
    );
    expect(enc.fields).toMatchObject({ smime: 'encrypted', subject: 'sealed', attachments: [], hasAttachments: false, preview: '' });
    expect(enc.text).toBe('');
    expect(enc.html).toBeNull();
    expect(searchDocument(enc)).not.toContain('secretword');
    const signed = await parseMessage(
      crlf(`From: s@example.org
To: a@example.test
Subject: signed
MIME-Version: 1.0
Content-Type: multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary="s"

--s
Content-Type: text/plain

signed words
--s
Content-Type: application/pkcs7-signature; name="smime.p7s"
Content-Disposition: attachment; filename="smime.p7s"
Content-Transfer-Encoding: base64

MIAGCSqGSIb3DQEHAqCAMIACAQE=
--s--
`),
    );
    expect(signed.fields.smime).toBe('signed');
    expect(signed.text.trim()).toBe('signed words');
  });
});
