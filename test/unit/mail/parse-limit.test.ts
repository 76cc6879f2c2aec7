// mailparser leaves its promise unsettled forever on an inline message/rfc822 part without a body
// (found by test/fuzz/targets/mime.ts). lib/mail parseMail bounds the parse: such a message is
// refused with api-106 in bounded time, so the ingest worker is never stuck on it, and ordinary
// messages parse unchanged by the bound.
import { describe, expect, it } from 'vitest';
import { parseMail, parseMessage } from '../../../lib/mail/index.js';

const stuck = Buffer.from(
  'Content-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Disposition: inline\r\nContent-Type: message/rfc822\r\n\r\n--b--\r\n',
);

describe('parse time limit', () => {
  it('refuses a message mailparser never finishes with api-106 within the limit', async () => {
    const started = Date.now();
    await expect(parseMessage(stuck)).rejects.toMatchObject({
      code: 'api-106',
      status: 400,
      message: expect.stringMatching(/did not finish within 5\d{3} ms/),
    });
    expect(Date.now() - started).toBeLessThan(9000);
  }, 15_000);

  it('refuses it on the ingest path too (parseMail, as lib/ingest mailPort uses it)', async () => {
    await expect(parseMail(stuck, { skipImageLinks: true, skipTextToHtml: true })).rejects.toMatchObject({ code: 'api-106' });
  }, 15_000);

  it('parses an ordinary message, an attached message included', async () => {
    const raw = Buffer.from(
      [
        'From: Carol <carol@example.net>',
        'To: alice@example.test',
        'Subject: Fwd: hello',
        'Content-Type: multipart/mixed; boundary=b',
        '',
        '--b',
        'Content-Type: text/plain',
        '',
        'see below',
        '--b',
        'Content-Type: message/rfc822',
        'Content-Disposition: inline',
        '',
        'From: dave@example.org',
        'Subject: hello',
        '',
        'inner body',
        '--b--',
        '',
      ].join('\r\n'),
    );
    const parsed = await parseMessage(raw);
    expect(parsed.fields.subject).toBe('Fwd: hello');
    expect(parsed.fields.fromAddress).toBe('carol@example.net');
    expect(parsed.text).toContain('see below');
  });
});
