import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ensureLocalCa, LocalPki, parseCsr } from '../../../lib/pki/index.js';
import { decryptAndVerify, encryptAndSign, newKeys, pem, signEntity, type NewKeys } from '../../../lib/keys/client/index.js';
import { requirePrograms } from '../../helpers/peers.js';

// Interop with OpenSSL (TESTING.md, Crypto interop): certificates, CMS encryption and signatures both ways.

const withOpenssl = requirePrograms('openssl');

const dir = mkdtempSync(join(tmpdir(), 'svcmail-interop-'));
const f = (name: string) => join(dir, name);
const openssl = (...args: string[]) => execFileSync('openssl', args, { encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'] });

let pki: LocalPki;
let alice: NewKeys & { encCert: string; signCert: string };
let bob: NewKeys & { encCert: string; signCert: string };

async function person(address: string) {
  const keys = await newKeys(address);
  const encCert = (await pki.issue({ csr: await parseCsr(keys.encryptionCsr), emails: [address], kind: 'encryption' })).certPem;
  const signCert = (await pki.issue({ csr: await parseCsr(keys.signingCsr), emails: [address], kind: 'signing' })).certPem;
  return { ...keys, encCert, signCert };
}

const ecdh = (k: NewKeys) =>
  crypto.subtle.importKey('pkcs8', k.encryptionPkcs8, { name: 'ECDH', namedCurve: 'P-256' }, false, ['deriveBits']);
const ecdsa = (k: NewKeys) => crypto.subtle.importKey('pkcs8', k.signingPkcs8, { name: 'ECDSA', namedCurve: 'P-256' }, false, ['sign']);

beforeAll(async () => {
  await ensureLocalCa(join(dir, 'ca'));
  pki = new LocalPki(join(dir, 'ca'), 30);
  alice = await person('alice@example.test');
  bob = await person('bob@example.test');
  writeFileSync(f('ca.pem'), readFileSync(join(dir, 'ca', 'ca.crt')));
  writeFileSync(f('alice-enc.pem'), alice.encCert);
  writeFileSync(f('alice-enc.key'), pem('PRIVATE KEY', alice.encryptionPkcs8));
  writeFileSync(f('alice-sign.pem'), alice.signCert);
  writeFileSync(f('alice-sign.key'), pem('PRIVATE KEY', alice.signingPkcs8));
  writeFileSync(f('bob-enc.pem'), bob.encCert);
  writeFileSync(f('bob-enc.key'), pem('PRIVATE KEY', bob.encryptionPkcs8));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const ENTITY = 'Content-Type: text/plain; charset=utf-8\r\n\r\nMeet at noon. Grüße\r\n';

describe.runIf(withOpenssl)('certificates', () => {
  it('an issued encryption certificate passes openssl verify -purpose smimeencrypt against the CA', () => {
    expect(openssl('verify', '-purpose', 'smimeencrypt', '-CAfile', f('ca.pem'), f('alice-enc.pem'))).toContain('OK');
    const text = openssl('x509', '-in', f('alice-enc.pem'), '-noout', '-text');
    expect(text).toContain('Key Agreement');
    expect(text).toContain('E-mail Protection');
    expect(text).toContain('email:alice@example.test');
    expect(text).toContain('prime256v1');
  });

  it('a signing certificate passes smimesign and fails smimeencrypt-only checks of another CA', () => {
    expect(openssl('verify', '-purpose', 'smimesign', '-CAfile', f('ca.pem'), f('alice-sign.pem'))).toContain('OK');
    const other = mkdtempSync(join(tmpdir(), 'svcmail-otherca-'));
    try {
      execFileSync(
        'openssl',
        [
          'req',
          '-x509',
          '-newkey',
          'ec',
          '-pkeyopt',
          'ec_paramgen_curve:P-256',
          '-nodes',
          '-subj',
          '/CN=other',
          '-keyout',
          join(other, 'k'),
          '-out',
          join(other, 'c'),
          '-days',
          '2',
        ],
        { stdio: 'ignore' },
      );
      expect(() => openssl('verify', '-purpose', 'smimeencrypt', '-CAfile', join(other, 'c'), f('alice-enc.pem'))).toThrow();
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
  });
});

describe.runIf(withOpenssl)('encryption', () => {
  it('a message the reference client encrypts and signs decrypts with openssl cms -decrypt and verifies with openssl cms -verify', async () => {
    const msg = await encryptAndSign(ENTITY, { certPem: alice.signCert, key: await ecdsa(alice) }, [bob.encCert, alice.encCert]);
    writeFileSync(f('c2o.eml'), msg);
    openssl('cms', '-decrypt', '-in', f('c2o.eml'), '-recip', f('bob-enc.pem'), '-inkey', f('bob-enc.key'), '-out', f('c2o.signed'));
    const inner = openssl('cms', '-verify', '-in', f('c2o.signed'), '-CAfile', f('ca.pem'), '-purpose', 'smimesign');
    expect(inner.replace(/\r\n/g, '\n')).toBe(ENTITY.replace(/\r\n/g, '\n'));
    // the other recipient (the sender's own copy) opens it too
    openssl('cms', '-decrypt', '-in', f('c2o.eml'), '-recip', f('alice-enc.pem'), '-inkey', f('alice-enc.key'), '-out', f('c2o.signed2'));
    // and a key that is not a recipient does not
    const stranger = await newKeys('eve@example.test');
    const eveCert = (await pki.issue({ csr: await parseCsr(stranger.encryptionCsr), emails: ['eve@example.test'], kind: 'encryption' }))
      .certPem;
    writeFileSync(f('eve.pem'), eveCert);
    writeFileSync(f('eve.key'), pem('PRIVATE KEY', stranger.encryptionPkcs8));
    expect(() => openssl('cms', '-decrypt', '-in', f('c2o.eml'), '-recip', f('eve.pem'), '-inkey', f('eve.key'))).toThrow();
  });

  it('a message openssl cms -encrypt makes (ECDH without UKM, SHA-1 KDF) decrypts with the reference client', async () => {
    writeFileSync(f('plain.txt'), ENTITY);
    for (const cipher of ['-aes256', '-aes128']) {
      openssl('cms', '-encrypt', cipher, '-in', f('plain.txt'), '-out', f('o2c.eml'), f('alice-enc.pem'));
      expect(openssl('cms', '-cmsout', '-in', f('o2c.eml'), '-print')).toContain('ukm: <ABSENT>'); // the pkijs trap
      const opened = await decryptAndVerify(readFileSync(f('o2c.eml'), 'utf8'), { certPem: alice.encCert, key: await ecdh(alice) });
      expect(opened.encrypted).toBe(true);
      expect(opened.signature).toBeNull();
      expect(opened.entity).toBe(ENTITY);
    }
  });

  it('an openssl message signed (detached and opaque) then encrypted opens and verifies with the reference client', async () => {
    writeFileSync(f('plain.txt'), ENTITY);
    for (const mode of [[], ['-nodetach']]) {
      openssl(
        'cms',
        '-sign',
        ...mode,
        '-md',
        'sha256',
        '-in',
        f('plain.txt'),
        '-signer',
        f('alice-sign.pem'),
        '-inkey',
        f('alice-sign.key'),
        '-out',
        f('o-signed.eml'),
      );
      openssl('cms', '-encrypt', '-aes256', '-in', f('o-signed.eml'), '-out', f('o-se.eml'), f('bob-enc.pem'));
      const opened = await decryptAndVerify(readFileSync(f('o-se.eml'), 'utf8'), { certPem: bob.encCert, key: await ecdh(bob) }, [
        readFileSync(f('ca.pem'), 'utf8'),
      ]);
      expect(opened.signature?.signerEmails).toEqual(['alice@example.test']);
      expect(opened.signature?.trusted).toBe(true);
      expect(opened.entity.replace(/\r\n/g, '\n')).toContain('Meet at noon. Grüße');
    }
  });

  it('a tampered signature is refused by the client and by openssl', async () => {
    const signed = await signEntity(ENTITY, alice.signCert, await ecdsa(alice));
    const [head, body] = signed.split('\r\n\r\n');
    const der = Buffer.from(body!, 'base64');
    const i = der.indexOf(Buffer.from('Meet at noon'));
    der[i] ^= 1;
    const bad = `${head}\r\n\r\n${der.toString('base64')}\r\n`;
    await expect(decryptAndVerify(bad, null)).rejects.toThrow();
    writeFileSync(f('bad.eml'), bad);
    expect(() => openssl('cms', '-verify', '-in', f('bad.eml'), '-CAfile', f('ca.pem'))).toThrow();
  });
});

describe.runIf(withOpenssl)('escrow wrap', () => {
  it('envelopes the master key to the scope certificate, bound to mailbox and generation', async () => {
    const { escrowWrap, masterKeyFromEscrow, random: rnd } = await import('../../../lib/keys/client/index.js');
    const master = rnd(32);
    const wrap = await escrowWrap('mb-1', 3, master, 'scope-1', bob.encCert);
    expect(Buffer.from(await masterKeyFromEscrow(wrap, 3, bob.encCert, await ecdh(bob))).equals(Buffer.from(master))).toBe(true);
    await expect(masterKeyFromEscrow({ ...wrap, mailboxUid: 'mb-2' }, 3, bob.encCert, await ecdh(bob))).rejects.toThrow(/not bound/);
    await expect(masterKeyFromEscrow(wrap, 4, bob.encCert, await ecdh(bob))).rejects.toThrow(/not bound/);
    // OpenSSL opens it too (the holders may use any CMS tool)
    writeFileSync(f('escrow.der'), Buffer.from(wrap.envelope, 'base64'));
    execFileSync('openssl', [
      'cms',
      '-decrypt',
      '-inform',
      'DER',
      '-in',
      f('escrow.der'),
      '-recip',
      f('bob-enc.pem'),
      '-inkey',
      f('bob-enc.key'),
      '-out',
      f('escrow.out'),
    ]);
    expect(readFileSync(f('escrow.out')).subarray(-32).equals(Buffer.from(master))).toBe(true);
  });
});

describe('recovery codes', () => {
  it('format and parse are inverse for random 160-bit values', async () => {
    const fc = await import('fast-check');
    const { formatRecoveryCode, parseRecoveryCode } = await import('../../../lib/keys/client/index.js');
    fc.assert(
      fc.property(fc.uint8Array({ minLength: 20, maxLength: 20 }), (b) => {
        const code = formatRecoveryCode(b);
        return (
          /^([A-Z2-7]{4}-){7}[A-Z2-7]{4}$/.test(code) &&
          Buffer.from(parseRecoveryCode(code.toLowerCase().replace(/-/g, ' '))).equals(Buffer.from(b))
        );
      }),
    );
  });
});
