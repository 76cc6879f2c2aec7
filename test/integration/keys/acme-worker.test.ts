// Spec: Signing-certificate enrolment (backend rfc8823), end to end through the real worker daemon
// (in process): the driver job orders at a local RFC 8823 ACME CA double, the CA's challenge comes
// in through /internal/mta/deliver (trusted Authentication-Results), delivery rule 2 consumes it,
// the reply leaves DKIM-signed through the outbound hand-off and a sendmail-compatible recorder (the
// signature checked by mailauth, a verifier that did not sign it), the CA validates and issues, and
// the driver installs the certificate — unless the vault was rekeyed meanwhile.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startWorker } from '../../../daemons/worker/main.js';
import type { RunningDaemon } from '../../../daemons/shared/run.js';
import { loadConfig } from '../../../lib/config/index.js';
import { ControlMessageModel, IngestEntryModel, OutboundHandoffModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { createVault, type CreatedVault } from '../../../lib/keys/client/index.js';
import { SigningEnrollmentModel, type SigningEnrollment } from '../../../lib/keys/index.js';
import { ensureLocalCa, generateDkimKey, LocalPki, spkiOf } from '../../../lib/pki/index.js';
import { AUDIENCE, ISSUER, TEST_SECRET } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requireScanners, startScanners, type Scanners } from '../../helpers/scanners.js';
import { ingestFixture, type IngestFixture } from '../ingest/setup.js';
import { messagesIn, recorder, type Recorder } from '../send/helpers.js';
import { AcmeDouble, type ChallengeMail } from './acme-double.js';
import { TEST_ARGON2, keyTestValues } from './helpers.js';

const withScanners = requireScanners();
const backends = await sqlBackends();
const TRUSTED = 'mx.example.test';
let scanners: Scanners;
beforeAll(async () => {
  if (!withScanners) return;
  scanners = await startScanners();
}, 150_000);
afterAll(async () => scanners?.stop());

async function until<T>(what: string, probe: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.runIf(withScanners).each(backends)('rfc8823 enrolment through the worker and the ACME CA double ($name)', (backend) => {
  let f: IngestFixture;
  let ca: AcmeDouble;
  let rec: Recorder;
  let worker: RunningDaemon;
  let dkimTxt = '';
  const challenges: ChallengeMail[] = [];
  const delivered: Array<{ status: number; tx: string }> = [];
  /** The CA's mail exchanger: replies the recorder took for the CA's address reach it while `hold` is off. */
  const forwarded = new Set<string>();
  let hold = false;

  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mail._domainkey.example.test') return [[dkimTxt]];
    throw Object.assign(new Error('no such record'), { code: 'ENOTFOUND' });
  };
  const dkimPasses = async (raw: string | Buffer) => {
    const v = await dkimVerify(Buffer.from(raw), { resolver });
    return v.results.some(
      (r: { signingDomain?: string; status: { result: string } }) => r.signingDomain === 'example.test' && r.status.result === 'pass',
    );
  };
  const repliesToCa = () => rec.runs().filter((r) => r.args.includes(ca.from));
  async function forward(): Promise<void> {
    if (hold) return;
    for (const r of repliesToCa()) {
      if (forwarded.has(r.eml)) continue;
      forwarded.add(r.eml);
      await ca.receiveReply(r.eml);
    }
  }
  const enrolments = () => f.api.deps.store.repo<SigningEnrollment>(SigningEnrollmentModel);
  async function stateOf(uid: string, want: string): Promise<SigningEnrollment> {
    return until(`enrolment ${uid} to be ${want}`, async () => {
      await forward();
      const r = await enrolments().get(uid);
      return r?.state === want ? r : null;
    });
  }

  /** What the CA mails: RFC 8823 §3.1, verified by the inbound MTA (its Authentication-Results). */
  const challengeRaw = (m: { to: string; from: string; subject: string; messageId: string }) =>
    [
      `Authentication-Results: ${TRUSTED}; dkim=pass header.d=ca.test; dmarc=pass header.from=ca.test`,
      `From: <${m.from}>`,
      `To: <${m.to}>`,
      `Subject: ${m.subject}`,
      `Message-ID: ${m.messageId}`,
      `Date: ${new Date().toUTCString()}`,
      'Auto-Submitted: auto-generated; type=acme',
      'MIME-Version: 1.0',
      'Content-Type: text/plain; charset=us-ascii',
      '',
      `This is an automatically generated ACME challenge for email address "${m.to}".`,
      '',
    ].join('\r\n');

  beforeAll(async () => {
    rec = recorder();
    const key = await generateDkimKey();
    dkimTxt = key.dnsTxt;
    const dkimDir = mkdtempSync(join(tmpdir(), 'svcmail-acme-dkim-'));
    writeFileSync(join(dkimDir, 'example.test.mail.key'), key.privateKeyPem, { mode: 0o600 });
    const caDir = join(mkdtempSync(join(tmpdir(), 'svcmail-acme-ca-')), 'ca');
    await ensureLocalCa(caDir);
    ca = new AcmeDouble(
      new LocalPki(caDir, 30),
      (m) => {
        challenges.push(m);
        // The CA mails after answering the order, as a real one does.
        setTimeout(
          () =>
            void f
              .deliver({ from: m.from, to: [m.to], raw: challengeRaw(m) })
              .then((r) => delivered.push({ status: r.status, tx: r.body?.transactionId })),
          50,
        );
      },
      dkimPasses,
    );
    await ca.start();
    const values = await keyTestValues({
      'mail:signing:backend': 'rfc8823',
      'mail:signing:acme:directory_url': `${ca.url}/directory`,
      'mail:dkim:dir': dkimDir,
      'mail:security:trusted_authserv_id': TRUSTED,
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
      'mail:scan:rspamd:url': scanners.rspamdUrl,
      'mail:scan:clamd:address': scanners.clamdAddress,
      'mail:jobs:scan:interval_seconds': 0.2,
      'mail:jobs:send:interval_seconds': 0.2,
      'mail:jobs:signing_enrollment:interval_seconds': 0.3,
      'mail:ingest:retry_backoff_seconds': 0,
      'mail:send:retry_backoff_seconds': 0,
    });
    f = await ingestFixture(backend, values);
    const config = loadConfig({
      env: { NODE_ENV: 'test' },
      values: {
        'auth:secret': TEST_SECRET,
        'auth:options:audience': AUDIENCE,
        'auth:options:issuer': ISSUER,
        'log:level': 'silent',
        'datastores:sql:url': f.api.config.get('datastores:sql:url'),
        data_dir: f.dataDir,
        'mail:transport:ingest:secret': 'unused-0123456789abcdef',
        'mail:jobs:wake_address': '',
        ...values,
      },
    });
    worker = await startWorker(config);
  }, 60_000);
  afterAll(async () => {
    await worker?.close();
    ca?.server.close();
    await f?.close();
  });

  async function enrol(box: { uid: string }, address: string, token: string): Promise<{ v: CreatedVault; uid: string }> {
    const v = await createVault(box.uid, address, 'pw', { argon2: TEST_ARGON2 });
    expect((await f.api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/enroll`, { token, body: v.body })).status).toBe(201);
    const req = await f.api.call('POST', `/api/mail/mailboxes/${box.uid}/keyvault/signing-enrollment`, {
      token,
      body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
    });
    expect(req.status, JSON.stringify(req.body)).toBe(201);
    expect(req.body).toMatchObject({ backend: 'rfc8823', state: 'requested' });
    return { v, uid: req.body.uid };
  }

  it('request → challenge consumed by the inbound rules → DKIM-signed reply through sendmail → validated → certificate installed', async () => {
    const { users } = f;
    const { v, uid } = await enrol(users.aliceBox, 'alice@example.test', users.alice);
    const done = await stateOf(uid, 'installed');

    // The challenge came in through the ingest route and was consumed, not filed.
    expect(challenges).toHaveLength(1);
    expect(delivered[0]!.status).toBe(202);
    // The scan job releases a round's entries together when the round ends, which can be after the
    // enrolment (woken by the consumed challenge) has finished: wait for the entry's final state.
    const entry = await until('the challenge entry to be released', async () => {
      const e = (await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: delivered[0]!.tx } }))[0];
      return e && e.state !== 'queued' ? e : null;
    });
    expect(entry.state).toBe('consumed');
    expect(await f.api.deps.store.repo(ControlMessageModel).get(entry.uid)).toMatchObject({
      kind: 'acme-challenge',
      mailboxUid: users.aliceBox.uid,
      sender: ca.from,
    });
    expect((await messagesIn(f.api.deps, users.aliceBox.uid, 'inbox')).filter((m) => m.subject.startsWith('ACME:'))).toEqual([]);

    // Exactly one reply left through the transport, from the mailbox to the CA, signed for example.test.
    const replies = repliesToCa();
    expect(replies).toHaveLength(1);
    expect(replies[0]!.args).toEqual(['-i', '-f', 'alice@example.test', '--', ca.from]);
    const eml = replies[0]!.eml;
    expect(eml).toContain(`Subject: Re: ${challenges[0]!.subject}`);
    expect(eml).toContain(`In-Reply-To: ${challenges[0]!.messageId}`);
    expect(eml).toMatch(/^DKIM-Signature:[^]*?d=example\.test/m);
    expect(await dkimPasses(eml)).toBe(true);
    // One character of the signed body changed (to a different one: the response may start with X).
    expect(
      await dkimPasses(
        eml.replace(/(-----BEGIN ACME RESPONSE-----\r\n)(.)/, (_m, head: string, c: string) => `${head}${c === 'X' ? 'Y' : 'X'}`),
      ),
    ).toBe(false);
    expect(ca.accepted).toHaveLength(1);
    const handoffs = await f.api.deps.store
      .repo<{ kind: string; state: string }>(OutboundHandoffModel)
      .list({ filter: { kind: 'acme-reply' } });
    expect(handoffs.map((h) => h.state)).toEqual(['sent']);

    // The CA's certificate is in the vault, for the vault's signing key.
    const vault = await f.api.call('GET', `/api/mail/mailboxes/${users.aliceBox.uid}/keyvault`, { token: users.alice });
    expect(vault.body.signingCertificate).toBe(done.certificate);
    const cert = new x509.X509Certificate(vault.body.signingCertificate);
    expect(spkiOf(cert).toString('base64')).toBe(v.body.signingPublicKey);
    expect(cert.issuer).toBe(new x509.X509Certificate(ca.orders.get('1')!.cert!).issuer);
    const status = await f.api.call('GET', '/api/system/signing-enrollment', { token: users.alice });
    expect(status.body.requests[0]).toMatchObject({ uid, state: 'installed', fingerprint: done.fingerprint });
  }, 60_000);

  it('a verified "ACME:" mail with no open request is filed normally', async () => {
    const { users } = f;
    // The driver releases a request's lease after its last step (a write of its own): wait for it.
    await until('the driver to release every request', async () =>
      (await enrolments().list({ limit: 100 })).every((r) => !(r as { claimedBy?: string | null }).claimedBy),
    );
    const before = (await enrolments().list({ limit: 100 })).map((r) => [r.uid, r.state, r.version]);
    const txs: string[] = [];
    // bob has no request at all; alice's request is finished (and this is not its token).
    for (const to of ['bob@example.test', 'alice@example.test']) {
      const r = await f.deliver({
        from: ca.from,
        to: [to],
        raw: challengeRaw({ to, from: ca.from, subject: 'ACME: NoOpenRequest0123456789', messageId: `<stray-${to}@ca.test>` }),
      });
      expect(r.status).toBe(202);
      txs.push(r.body.transactionId);
    }
    for (const [i, box] of [users.bobBox, users.aliceBox].entries()) {
      const entry = await until('the stray challenge to be delivered', async () => {
        const e = (await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: txs[i]! } }))[0];
        return e && e.state !== 'queued' ? e : null;
      });
      expect(entry.state).toBe('delivered');
      expect(await f.api.deps.store.repo(ControlMessageModel).get(entry.uid)).toBeNull();
      expect((await messagesIn(f.api.deps, box.uid, 'inbox')).map((m) => m.subject)).toContain('ACME: NoOpenRequest0123456789');
    }
    expect((await enrolments().list({ limit: 100 })).map((r) => [r.uid, r.state, r.version])).toEqual(before);
    expect(repliesToCa()).toHaveLength(1);
  }, 60_000);

  it('a vault rekeyed while the CA validates: the certificate is not installed, the request is superseded', async () => {
    const { users } = f;
    hold = true; // the reply waits at the CA's door until the rekey is done
    const { uid } = await enrol(users.bobBox, 'bob@example.test', users.bob);
    await stateOf(uid, 'validating');
    const next = await createVault(users.bobBox.uid, 'bob@example.test', 'pw2', { current: 1, argon2: TEST_ARGON2 });
    expect(
      (await f.api.call('POST', `/api/mail/mailboxes/${users.bobBox.uid}/keyvault/rekey`, { token: users.bob, body: next.body })).status,
    ).toBe(200);
    hold = false;
    const after = await stateOf(uid, 'superseded');
    expect(after.certificate).toContain('BEGIN CERTIFICATE'); // issued by the CA, but not installed
    expect(after.reason).toMatch(/rekeyed/);
    const vault = await f.api.call('GET', `/api/mail/mailboxes/${users.bobBox.uid}/keyvault`, { token: users.bob });
    expect(vault.body.masterKeyGeneration).toBe(2);
    expect(vault.body.signingCertificate ?? null).toBeNull();
  }, 60_000);
});
