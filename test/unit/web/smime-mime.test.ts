// The MIME the browser makes for S/MIME (web/src/crypto/mime.ts), read back by postal-mime (what the
// reading pane uses) and by mailparser (what the server uses): protected headers inside, "[...]"
// outside, non-ASCII names and subjects, attachments byte for byte; and the S/MIME reader leaving a
// PGP/MIME signature alone.
import { simpleParser } from 'mailparser';
import PostalMime from 'postal-mime';
import { describe, expect, it } from 'vitest';
import { decryptAndVerify } from '../../../lib/keys/client/index.js';
import { forwardedMessage, HIDDEN_SUBJECT, innerEntity, outerMessage, type Composed } from '../../../web/src/crypto/mime.js';

const composed = (files: Composed['files']): Composed => ({
  from: { name: 'Zoë Ørsted', address: 'zoe@example.test' },
  to: [{ name: 'Bob, the "Builder"', address: 'bob@example.test' }],
  cc: [],
  bcc: [{ address: 'hidden@example.test' }],
  subject: 'Grüße — a subject long enough to be folded into more than one encoded word, with ünïcödé',
  text: 'Line one\nLine two ✓',
  html: '<p>Line one<br>Line two ✓</p>',
  files,
  date: new Date('2026-11-27T10:00:00Z'),
  messageId: '<abc@example.test>',
  inReplyTo: '<parent@example.test>',
  references: '<root@example.test> <parent@example.test>',
});

describe('web/src/crypto/mime.ts', () => {
  const bytes = new Uint8Array(3000).map((_, i) => (i * 7) % 256);
  const files = [
    { name: 'Bericht März.pdf', type: 'application/pdf', bytes },
    { name: 'plain.txt', type: 'text/plain', bytes: new TextEncoder().encode('hello\n') },
  ];

  it('protects the headers inside: postal-mime reads subject, addresses, both bodies and the files back exactly', async () => {
    const inner = innerEntity(composed(files));
    expect(inner).toMatch(/^Content-Type: multipart\/mixed; boundary="[^"]+"; protected-headers="v1"\r\n/);
    expect(inner).not.toMatch(/hidden@example.test/); // Bcc never inside
    const mail = await PostalMime.parse(inner);
    expect(mail.subject).toBe(composed([]).subject);
    expect(mail.from).toMatchObject({ name: 'Zoë Ørsted', address: 'zoe@example.test' });
    expect(mail.to?.[0]).toMatchObject({ name: 'Bob, the "Builder"', address: 'bob@example.test' });
    expect(mail.text?.replace(/\r\n/g, '\n').trim()).toBe('Line one\nLine two ✓');
    expect(mail.html).toContain('Line two ✓');
    expect(mail.attachments.map((a) => [a.filename, a.mimeType])).toEqual([
      ['Bericht März.pdf', 'application/pdf'],
      ['plain.txt', 'text/plain'],
    ]);
    expect(new Uint8Array(mail.attachments[0]!.content as ArrayBuffer)).toEqual(bytes);
  });

  it('a text-only entity carries the protected-headers parameter on its own Content-Type', async () => {
    const inner = innerEntity({ ...composed([]), html: null });
    expect(inner).toMatch(/^Content-Type: text\/plain; charset=utf-8; protected-headers="v1"\r\n/);
    expect((await PostalMime.parse(inner)).text?.replace(/\r\n/g, '\n').trim()).toBe('Line one\nLine two ✓');
  });

  it('the outer message hides the subject, keeps delivery headers and threading, and parses on the server side', async () => {
    const outer = outerMessage(
      composed([]),
      'MIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data\r\n\r\nAAAA\r\n',
    );
    const parsed = await simpleParser(outer);
    expect(parsed.subject).toBe(HIDDEN_SUBJECT);
    expect((parsed.bcc as { value: Array<{ address: string }> }).value[0]!.address).toBe('hidden@example.test');
    expect(parsed.inReplyTo).toBe('<parent@example.test>');
    expect(parsed.messageId).toBe('<abc@example.test>');
    expect(outer).not.toMatch(/Grüße|Gr=C3|R3LDvMOf/); // nor in an encoded word
  });

  it('decryptAndVerify leaves a PGP/MIME signed message alone (not S/MIME): no signature, the entity as it is', async () => {
    const pgp = [
      'Content-Type: multipart/signed; micalg=pgp-sha256; protocol="application/pgp-signature"; boundary="b"',
      '',
      '--b',
      'Content-Type: text/plain',
      '',
      'signed with PGP',
      '--b',
      'Content-Type: application/pgp-signature',
      '',
      '-----BEGIN PGP SIGNATURE-----',
      'iQEzBAEBCAAdFiEE',
      '-----END PGP SIGNATURE-----',
      '--b--',
      '',
    ].join('\r\n');
    const opened = await decryptAndVerify(pgp, null);
    expect(opened.signature).toBeNull();
    expect(opened.entity).toContain('signed with PGP');
  });
});

describe('forwardedMessage: a decrypted message forwarded whole', () => {
  it('is the inner entity itself when that carries protected headers', () => {
    const inner = innerEntity(composed([]));
    expect(forwardedMessage('From: x@example.test\r\nSubject: [...]', inner, 'anything')).toBe(inner);
  });

  it('otherwise takes the stored headers without Bcc, the hidden subject and the outer Content-*; the subject is one encoded line', async () => {
    const head = [
      'From: Alice <alice@example.test>',
      'To: bob@example.test',
      'Bcc: hidden@example.test,',
      ' other@example.test',
      `Subject: ${HIDDEN_SUBJECT}`,
      'MIME-Version: 1.0',
      'Content-Type: application/pkcs7-mime; smime-type=enveloped-data',
      'Content-Transfer-Encoding: base64',
      'Message-ID: <m1@example.test>',
    ].join('\r\n');
    const entity = 'Content-Type: text/plain; charset=utf-8\r\n\r\nThe body.\r\n';
    const whole = forwardedMessage(head, entity, 'Grüße\r\nBcc: injected@example.test');
    expect(whole).not.toMatch(/hidden@|other@|injected@example\.test\r?\n|pkcs7|\[\.\.\.\]/);
    const parsed = await PostalMime.parse(whole);
    expect(parsed.subject).toBe('Grüße Bcc: injected@example.test');
    expect(parsed.from?.address).toBe('alice@example.test');
    expect(parsed.messageId).toBe('<m1@example.test>');
    expect(parsed.bcc ?? []).toEqual([]);
    expect(parsed.text?.trim()).toBe('The body.');
  });
});
