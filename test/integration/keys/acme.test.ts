import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freshSqlite } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { createVault } from '../../../lib/keys/client/index.js';
import {
  AcmeClient,
  consumeAcmeChallenge,
  driveEnrollments,
  loadAccountKey,
  SigningEnrollmentModel,
  type ChallengeMail,
  type SigningEnrollment,
} from '../../../lib/keys/index.js';
import { ensureLocalCa, LocalPki } from '../../../lib/pki/index.js';
import { AcmeDouble, type ChallengeMail as CaMail } from './acme-double.js';
import { TEST_ARGON2, keyTestValues } from './helpers.js';

// Spec: Signing-certificate enrolment (backend rfc8823) against a local ACME CA double, step by
// step: the challenge mail is handed to consumeAcmeChallenge as the inbound rules do, and the reply
// goes to the CA through a mailer port. acme-worker.test.ts runs the same through the real worker,
// the ingest route and the DKIM-signing outbound path.

describe('rfc8823 signing enrolment', () => {
  let api: TestApi;
  let ca: AcmeDouble;
  const mails: CaMail[] = [];

  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-acme-'));
    await ensureLocalCa(join(dir, 'ca'));
    ca = new AcmeDouble(new LocalPki(join(dir, 'ca'), 30), (m) => mails.push(m));
    await ca.start();
    api = await startTestApi(
      { name: 'sqlite', open: async () => freshSqlite() },
      await keyTestValues({ 'mail:signing:backend': 'auto', 'mail:signing:acme:directory_url': `${ca.url}/directory` }),
    );
  });
  afterAll(async () => {
    await api?.close();
    ca?.server.close();
  });

  it('request → challenge mail consumed → reply → validated → certificate installed in the vault', async () => {
    const adminToken = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    await api.call('POST', '/api/mail/domains', { token: adminToken, body: { name: 'corp.example.net', verified: true } });
    const box = (
      await api.call('POST', '/api/mail/mailboxes', { token: adminToken, body: { address: 'dana@corp.example.net', owners: ['dana'] } })
    ).body;
    const dana = await api.token({ uid: 'dana' });
    const v = await createVault(box.uid, 'dana@corp.example.net', 'pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/enroll`, { token: dana, body: v.body })).status).toBe(201);
    const req = await api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/signing-enrollment`, {
      token: dana,
      body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
    });
    expect(req.body).toMatchObject({ backend: 'rfc8823', state: 'requested' });

    const acme = new AcmeClient(
      api.config.get('mail:signing:acme:directory_url'),
      loadAccountKey(join(mkdtempSync(join(tmpdir(), 'acct-')), 'acme.key')),
    );
    const mailer = {
      send: async (raw: string, env: { from: string; to: string[] }) => {
        expect(env.to).toEqual([ca.from]);
        await ca.receiveReply(raw);
      },
    };
    expect(await driveEnrollments(api.deps, acme, mailer)).toBe(1);
    expect(mails).toHaveLength(1);
    const status = async () => (await api.call('GET', '/api/system/signing-enrollment', { token: dana })).body.requests[0].state;
    expect(await status()).toBe('challenge-pending');

    const mail: ChallengeMail = {
      mailboxUid: box.uid,
      from: mails[0]!.from,
      subject: mails[0]!.subject,
      messageId: mails[0]!.messageId,
      senderVerified: false,
    };
    expect(await consumeAcmeChallenge(api.deps, mail)).toBe(false); // unverified sender: not consumed
    expect(await consumeAcmeChallenge(api.deps, { ...mail, from: 'someone@else.test', senderVerified: true })).toBe(false);
    expect(await consumeAcmeChallenge(api.deps, { ...mail, senderVerified: true })).toBe(true);
    expect(await status()).toBe('challenge-answered');
    // the same challenge again (an inbound re-run after a crash) is still consumed; another token is not
    expect(await consumeAcmeChallenge(api.deps, { ...mail, senderVerified: true })).toBe(true);
    expect(await consumeAcmeChallenge(api.deps, { ...mail, subject: 'ACME: AnotherToken123', senderVerified: true })).toBe(false);
    expect(await status()).toBe('challenge-answered');

    await driveEnrollments(api.deps, acme, mailer); // reply sent, CA told
    expect(ca.replies).toHaveLength(1);
    expect(ca.replies[0]).toContain('In-Reply-To: <chal-1@ca.test>');
    expect(await status()).toBe('validating');
    await driveEnrollments(api.deps, acme, mailer); // finalize + install
    expect(await status()).toBe('installed');
    const vault = await api.call('GET', `/api/mail/mailboxes/${box.uid}/keyvault`, { token: dana });
    expect(vault.body.signingCertificate).toContain('BEGIN CERTIFICATE');
  });

  it('a challenge that arrives while the driver places the order is retried by the inbound job, not filed', async () => {
    const adminToken = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    const box = (
      await api.call('POST', '/api/mail/mailboxes', { token: adminToken, body: { address: 'erin@corp.example.net', owners: ['erin'] } })
    ).body;
    const erin = await api.token({ uid: 'erin' });
    const v = await createVault(box.uid, 'erin@corp.example.net', 'pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/enroll`, { token: erin, body: v.body })).status).toBe(201);
    const req = await api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/signing-enrollment`, {
      token: erin,
      body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
    });
    const repo = api.deps.store.repo<SigningEnrollment>(SigningEnrollmentModel);
    expect(await repo.claim({ uid: req.body.uid }, { owner: 'driver-test', leaseMs: 60_000, limit: 1 })).toHaveLength(1);
    const mail: ChallengeMail = {
      mailboxUid: box.uid,
      from: ca.from,
      subject: 'ACME: EarlyToken12345',
      messageId: '<early@ca.test>',
      senderVerified: true,
    };
    await expect(consumeAcmeChallenge(api.deps, mail)).rejects.toThrow(/being placed/);
    await repo.release(req.body.uid, 'driver-test');
    expect(await consumeAcmeChallenge(api.deps, mail)).toBe(false); // nothing in flight: filed normally
    expect((await repo.get(req.body.uid))!.state).toBe('requested');
  });

  it('auto picks manual for local test domains', async () => {
    const s = await seedUsers(api);
    const v = await createVault(s.aliceBox.uid, 'alice@example.test', 'pw', { argon2: TEST_ARGON2 });
    await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/enroll`, { token: s.alice, body: v.body });
    const req = await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/signing-enrollment`, {
      token: s.alice,
      body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
    });
    expect(req.body.backend).toBe('manual');
  });
});
