// A real MTA path: our sendmail transport → Postfix's sendmail → a private Postfix → smtp-sink,
// with the DKIM signature verified by a verifier that did not sign it (mailauth).
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { loadConfig } from '../../../lib/config/index.js';
import { generateDkimKey } from '../../../lib/pki/index.js';
import { dkimSign, sendmailTransport } from '../../../lib/send/index.js';
import { postfixAvailable, startPostfix, type PostfixInstance } from '../../helpers/postfix.js';

const available = postfixAvailable();

describe.runIf(available)('outbound through a real Postfix, DKIM-signed', () => {
  let pf: PostfixInstance;
  let txt: string;
  let config: ReturnType<typeof loadConfig>;
  beforeAll(async () => {
    pf = await startPostfix();
    const key = await generateDkimKey();
    txt = key.dnsTxt;
    const dkimDir = mkdtempSync(join(tmpdir(), 'svcmail-dkim-'));
    writeFileSync(join(dkimDir, 'example.test.mail.key'), key.privateKeyPem, { mode: 0o600 });
    config = loadConfig({ env: { NODE_ENV: 'test' }, values: { 'mail:dkim:dir': dkimDir } });
  }, 60_000);
  afterAll(async () => pf?.stop());

  const resolver = (t: string) => async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mail._domainkey.example.test') return [[t]];
    const e = new Error('no such record') as NodeJS.ErrnoException;
    e.code = 'ENOTFOUND';
    throw e;
  };

  it('relays a signed message that an independent verifier passes, byte-identical but for the MTA headers', async () => {
    const msg = Buffer.from(
      [
        'From: MAILER-DAEMON@example.test',
        'To: someone@example.net',
        'Subject: Undeliverable: hello',
        `Date: ${new Date().toUTCString()}`,
        'Message-ID: <dsn-1@example.test>',
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Your message could not be delivered.',
        '',
      ].join('\r\n'),
    );
    const { raw, signed } = await dkimSign(config, msg, 'example.test');
    expect(signed).toBe(true);
    const transport = sendmailTransport({ path: pf.sendmail, timeoutMs: 10_000 });
    const result = await transport.send({ raw, envelopeFrom: 'MAILER-DAEMON@example.test', envelopeTo: ['someone@example.net'] });
    expect(result).toEqual({ accepted: ['someone@example.net'], refused: [] });
    const [relayed] = await pf.waitFor(1);
    expect(relayed.toString()).toContain('Message-ID: <dsn-1@example.test>');
    const verdict = await dkimVerify(relayed, { resolver: resolver(txt) });
    expect(verdict.results[0].status.result).toBe('pass');
    const tampered = Buffer.from(relayed.toString().replace('could not be delivered', 'was delivered'));
    expect((await dkimVerify(tampered, { resolver: resolver(txt) })).results[0].status.result).not.toBe('pass');
  }, 60_000);

  it('leaves a message unsigned (and says so) for a domain without a key', async () => {
    const r = await dkimSign(config, Buffer.from('From: a@other.test\r\n\r\nx\r\n'), 'other.test');
    expect(r.signed).toBe(false);
  });
});
