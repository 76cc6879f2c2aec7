import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync, readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSqlite } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { requirePrograms } from '../../helpers/peers.js';
import { createVault } from '../../../lib/keys/client/index.js';
import {
  ensureLocalCa,
  generateDkimKey,
  IssuedCertificateModel,
  LocalPki,
  parseCsr,
  type IssuedCertificate,
} from '../../../lib/pki/index.js';
import { TEST_ARGON2 } from './helpers.js';

// Spec: Versioning, encryption certificate backends — local CA files, and an external PKI vault
// (sign at <mount>/sign/<role>, revoke at <mount>/revoke) played by a local HTTP server that
// speaks that API and signs with its own CA.

const withOpenssl = requirePrograms('openssl');

const tmp = mkdtempSync(join(tmpdir(), 'svcmail-pki-'));
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('local CA files', () => {
  it.runIf(withOpenssl)('makes a P-256 CA with a 0700 directory and a 0600 key, keeps it, rotates only when asked', async () => {
    const dir = join(tmp, 'ca');
    const first = await ensureLocalCa(dir);
    expect(first.created).toBe(true);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(join(dir, 'ca.key')).mode & 0o777).toBe(0o600);
    const text = execFileSync('openssl', ['x509', '-in', join(dir, 'ca.crt'), '-noout', '-text'], { encoding: 'utf8' });
    expect(text).toContain('prime256v1');
    expect(text).toMatch(/CA:TRUE/);
    const again = await ensureLocalCa(dir);
    expect(again).toEqual({ certPem: first.certPem, created: false });
    const rotated = await ensureLocalCa(dir, { rotate: true });
    expect(rotated.created).toBe(true);
    expect(rotated.certPem).not.toBe(first.certPem);
    expect(readdirSync(dir).filter((f) => f.includes('.rotated-'))).toHaveLength(2);
  });

  it.runIf(withOpenssl)('makes 2048-bit RSA DKIM keys with their DNS TXT value', async () => {
    const k = await generateDkimKey();
    writeFileSync(join(tmp, 'dkim.key'), k.privateKeyPem);
    expect(execFileSync('openssl', ['rsa', '-in', join(tmp, 'dkim.key'), '-noout', '-text'], { encoding: 'utf8' })).toContain(
      'Private-Key: (2048 bit',
    );
    expect(k.dnsTxt).toBe(`v=DKIM1; k=rsa; p=${k.publicKeyDer.toString('base64')}`);
  });
});

interface VaultCall {
  path: string;
  token: string | undefined;
  namespace: string | undefined;
  body: Record<string, unknown>;
}

describe('PKI vault backend', () => {
  let vaultServer: Server;
  let api: TestApi;
  const calls: VaultCall[] = [];
  let vaultCa: LocalPki;
  let fail = false;

  beforeAll(async () => {
    await ensureLocalCa(join(tmp, 'vault-ca'));
    vaultCa = new LocalPki(join(tmp, 'vault-ca'), 10);
    vaultServer = createServer((req, res) => {
      let raw = '';
      req.on('data', (c) => (raw += c));
      req.on('end', async () => {
        const body = JSON.parse(raw || '{}') as Record<string, unknown>;
        calls.push({
          path: req.url!,
          token: req.headers['x-vault-token'] as string,
          namespace: req.headers['x-vault-namespace'] as string,
          body,
        });
        res.setHeader('content-type', 'application/json');
        if (req.headers['x-vault-token'] !== 's.test-token' || fail) {
          res.statusCode = fail ? 500 : 403;
          return res.end(JSON.stringify({ errors: [fail ? 'internal error' : 'permission denied'] }));
        }
        if (req.url === '/v1/pki-mail/sign/mailer') {
          const issued = await vaultCa.issue({
            csr: await parseCsr(String(body.csr)),
            emails: String(body.alt_names).split(','),
            kind: 'encryption',
          });
          return res.end(
            JSON.stringify({
              data: {
                certificate: issued.certPem,
                issuing_ca: issued.chainPem[0],
                ca_chain: issued.chainPem,
                serial_number: issued.serial.replace(/(..)(?=.)/g, '$1:'),
              },
            }),
          );
        }
        if (req.url === '/v1/pki-mail/revoke') return res.end(JSON.stringify({ data: { revocation_time: Math.floor(Date.now() / 1000) } }));
        res.statusCode = 404;
        res.end(JSON.stringify({ errors: [] }));
      });
    });
    await new Promise<void>((r) => vaultServer.listen(0, '127.0.0.1', r));
    api = await startTestApi(
      { name: 'sqlite', open: async () => freshSqlite() },
      {
        'mail:pki:backend': 'vault',
        'mail:pki:vault:addr': `http://127.0.0.1:${(vaultServer.address() as AddressInfo).port}`,
        'mail:pki:vault:token': 's.test-token',
        'mail:pki:vault:mount': 'pki-mail',
        'mail:pki:vault:role': 'mailer',
        'mail:pki:vault:namespace': 'team-a',
        'mail:keys:argon2:min_memory_kib': 8192,
      },
    );
  });
  afterAll(async () => {
    await api?.close();
    vaultServer?.close();
  });

  it.runIf(withOpenssl)('enrolment signs the CSR at <mount>/sign/<role>; rekey revokes the old serial at <mount>/revoke', async () => {
    const s = await seedUsers(api);
    const v = await createVault(s.aliceBox.uid, 'alice@example.test', 'pw', { argon2: TEST_ARGON2 });
    const r = await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/enroll`, { token: s.alice, body: v.body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(calls[0]).toMatchObject({
      path: '/v1/pki-mail/sign/mailer',
      token: 's.test-token',
      namespace: 'team-a',
      body: { common_name: 'alice@example.test', alt_names: 'alice@example.test' },
    });
    writeFileSync(join(tmp, 'vault-ca.pem'), readFileSync(join(tmp, 'vault-ca', 'ca.crt')));
    writeFileSync(join(tmp, 'alice.pem'), r.body.encryptionCertificate);
    expect(
      execFileSync('openssl', ['verify', '-purpose', 'smimeencrypt', '-CAfile', join(tmp, 'vault-ca.pem'), join(tmp, 'alice.pem')], {
        encoding: 'utf8',
      }),
    ).toContain('OK');
    const [issued] = await api.deps.store.repo<IssuedCertificate>(IssuedCertificateModel).list({ filter: { mailboxUid: s.aliceBox.uid } });
    expect(issued!.backend).toBe('vault');

    const next = await createVault(s.aliceBox.uid, 'alice@example.test', 'pw2', { current: 1, argon2: TEST_ARGON2 });
    expect(
      (await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/rekey`, { token: s.alice, body: next.body })).status,
    ).toBe(200);
    const revoke = calls.find((c) => c.path === '/v1/pki-mail/revoke');
    expect(revoke?.body.serial_number).toBe(issued!.serial.replace(/(..)(?=.)/g, '$1:'));
    const after = await api.deps.store.repo<IssuedCertificate>(IssuedCertificateModel).get(issued!.uid);
    expect(after!.revokedAt).toBeInstanceOf(Date);

    // a vault that fails answers 503 api-113 and nothing is stored
    fail = true;
    const bobVault = await createVault(s.bobBox.uid, 'bob@example.test', 'pw', { argon2: TEST_ARGON2 });
    const down = await api.call('POST', `/api/mail/mailboxes/${s.bobBox.uid}/keyvault/enroll`, { token: s.bob, body: bobVault.body });
    expect(down.status).toBe(503);
    expect(down.body.code).toBe('api-113');
    expect((await api.call('GET', `/api/mail/mailboxes/${s.bobBox.uid}/keyvault`, { token: s.bob })).body.enrolled).toBe(false);
    fail = false;
  });
});
