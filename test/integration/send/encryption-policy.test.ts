// Spec: Encryption policy on POST /api/mail/messages/:id/send, over real HTTP with a real transport
// (sendmail-compatible recorder) and a real DNS server on loopback. Send refuses plaintext where the
// policy says automatic and keys exist (same-org: the recipient's issued, unrevoked encryption
// certificate), refuses ciphertext where it says prohibited (api-121, 422), and tells federated
// domains (a _svc.<domain> TXT record) from external ones.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault, encryptEntity } from '../../../lib/keys/client/index.js';
import { clearFederationCache } from '../../../lib/keys/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { fingerprintOf, pkiBackend, revokeCertificate } from '../../../lib/pki/index.js';
import { jobUidOf, OutboundJobModel, type OutboundJob } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { keyTestValues, startTxtDns, TEST_ARGON2, type TxtDns } from '../keys/helpers.js';
import { draft, folderByRole, recorder, type Recorder } from './helpers.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('encryption policy on send (%s)', (_name, backend) => {
  let api: TestApi;
  let rec: Recorder;
  let dns: TxtDns;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  let bobCert = '';
  let bobFingerprint = '';
  let n = 0;

  beforeAll(async () => {
    rec = recorder();
    dns = await startTxtDns();
    dns.txt.set('_svc.peer.test', 'v=SVCv1; id=peer0001; host=mail.peer.test;');
    dns.silent.add('_svc.mute.test');
    clearFederationCache();
    api = await startTestApi(
      backend,
      await keyTestValues({
        'mail:transport:sendmail:path': rec.bin,
        'mail:transport:sendmail:log_path': rec.log,
        'mail:send:rate_limit:max': 1000,
        // The resolver would wait 5 minutes (twice) for the silent domain: far past this file's test
        // timeout, so a send that finishes at all went by mail:keys:federation:send_timeout_ms.
        'mail:dns:nameservers': [dns.server],
        'mail:dns:timeout_ms': 300_000,
        'mail:keys:federation:send_timeout_ms': 300,
      }),
    );
    users = await seedUsers(api);
    expect(
      (await api.call('POST', '/api/mail/mailboxes', { token: users.admin, body: { address: 'carol@example.test', owners: ['carol'] } }))
        .status,
    ).toBe(201);
    // bob has keys (an encryption certificate issued by the local CA); carol has none.
    const v = await createVault(users.bobBox.uid, 'bob@example.test', 'pw', { argon2: TEST_ARGON2 });
    const r = await api.call('POST', `/api/mail/mailboxes/${users.bobBox.uid}/keyvault/enroll`, { token: users.bob, body: v.body });
    expect(r.status).toBe(201);
    bobCert = r.body.encryptionCertificate;
    bobFingerprint = fingerprintOf(bobCert);
  }, 60_000);
  afterAll(async () => {
    dns?.close();
    await api?.close();
  });

  const policy = async (p: Record<string, string>) => {
    const cur = await api.call('GET', '/api/system/encryption-policy', { token: users.admin });
    const r = await api.call('PUT', '/api/system/encryption-policy', { token: users.admin, body: { ...p, version: cur.body.version } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  const plain = (to: string[]) => draft(api, users.aliceBox.uid, { from: 'alice@example.test', to, subject: `plain ${++n}` });
  /** A client-made S/MIME draft through the compose route (the server stores the ciphertext as it came). */
  async function encrypted(to: string[]): Promise<{ uid: string }> {
    const entity = await encryptEntity('Content-Type: text/plain; charset=utf-8\r\n\r\nsecret\r\n', [bobCert]);
    const raw = [
      `From: alice@example.test`,
      `To: ${to.join(', ')}`,
      `Subject: sealed ${++n}`,
      `Date: ${new Date().toUTCString()}`,
      `Message-ID: <sealed-${n}-${Date.now()}@example.test>`,
      entity,
    ].join('\r\n');
    const r = await api.call('POST', `/api/mail/compose/encrypted?mailboxUid=${users.aliceBox.uid}`, {
      token: users.alice,
      body: raw,
      headers: { 'content-type': 'application/pkcs7-mime' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body.smime).toBe('encrypted');
    return r.body;
  }
  const send = (uid: string, token = users.alice) => api.call('POST', `/api/mail/messages/${uid}/send`, { token, body: {} });
  const job = (uid: string) => api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(uid));

  /** A refusal leaves nothing behind: no Outbox record, the draft in Drafts, nothing handed over. */
  async function expectRefused(d: { uid: string }, rcpt: string, why: RegExp): Promise<void> {
    const before = rec.runs().length;
    const r = await send(d.uid);
    expect(r.status, JSON.stringify(r.body)).toBe(422);
    expect(r.body).toMatchObject({ code: 'api-121', status: 422 });
    expect(r.body.message).toContain(rcpt);
    expect(r.body.message).toMatch(why);
    expect(await job(d.uid)).toBeNull();
    const msg = await api.deps.store.repo<Message>(MessageModel).get(d.uid);
    expect(msg!.folderUid).toBe((await folderByRole(api.deps, users.aliceBox.uid, 'drafts')).uid);
    expect(msg!.draft).toBe(true);
    expect(rec.runs().length).toBe(before);
  }
  async function expectSent(d: { uid: string }, accepted: string[]): Promise<void> {
    const r = await send(d.uid);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect([...r.body.accepted].sort()).toEqual([...accepted].sort());
    expect((await job(d.uid))!.state).toBe('sent');
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'sent')).uid,
    );
  }

  it('automatic (same org): plaintext to a recipient with an issued key is refused; to one without a key it goes', async () => {
    await policy({ encryptSameOrg: 'automatic', encryptFederated: 'optional', encryptExternal: 'optional' });
    await expectRefused(await plain(['bob@example.test']), 'bob@example.test', /requires encryption/);
    // one keyed recipient among others refuses the whole send
    await expectRefused(
      await plain(['carol@example.test', 'bob@example.test', 'x@nowhere.test']),
      'bob@example.test',
      /requires encryption/,
    );
    await expectSent(await plain(['carol@example.test']), ['carol@example.test']);
    await expectSent(await encrypted(['bob@example.test']), ['bob@example.test']);
    // another user cannot even see alice's draft (and an admin's trusted role does not help)
    const d = await plain(['bob@example.test']);
    expect((await send(d.uid, users.bob)).status).toBe(404);
    expect((await send(d.uid, users.admin)).status).toBe(404);
  });

  it('prohibited: a ciphertext draft (application/pkcs7-mime) is refused; plaintext goes', async () => {
    await policy({ encryptSameOrg: 'prohibited', encryptFederated: 'optional', encryptExternal: 'optional' });
    await expectRefused(await encrypted(['bob@example.test']), 'bob@example.test', /prohibits/);
    await expectSent(await plain(['bob@example.test']), ['bob@example.test']);
  });

  it('optional: plaintext and ciphertext both go, to keyed and unkeyed recipients', async () => {
    await policy({ encryptSameOrg: 'optional', encryptFederated: 'optional', encryptExternal: 'optional' });
    await expectSent(await plain(['bob@example.test', 'carol@example.test']), ['bob@example.test', 'carol@example.test']);
    await expectSent(await encrypted(['bob@example.test', 'carol@example.test']), ['bob@example.test', 'carol@example.test']);
  });

  it('federated: a domain with a _svc TXT record is classified federated, one without it external', async () => {
    await policy({ encryptSameOrg: 'optional', encryptFederated: 'prohibited', encryptExternal: 'optional' });
    await expectRefused(await encrypted(['dana@peer.test']), 'dana@peer.test', /prohibits/);
    const before = rec.runs().length;
    await expectSent(await encrypted(['erin@nowhere.test']), ['erin@nowhere.test']);
    expect(
      rec
        .runs()
        .slice(before)
        .map((r) => r.args.at(-1)),
    ).toEqual(['erin@nowhere.test']);
    await policy({ encryptSameOrg: 'optional', encryptFederated: 'optional', encryptExternal: 'prohibited' });
    await expectSent(await encrypted(['dana@peer.test']), ['dana@peer.test']);
    await expectRefused(await encrypted(['erin@nowhere.test']), 'erin@nowhere.test', /prohibits/);
  });

  it('a domain whose DNS does not answer counts as external after mail:keys:federation:send_timeout_ms, not after the resolver timeout', async () => {
    await policy({ encryptSameOrg: 'optional', encryptFederated: 'prohibited', encryptExternal: 'optional' });
    // prohibited for federated, so a send that went means the silent domain was taken as external
    await expectSent(await encrypted(['frank@mute.test']), ['frank@mute.test']);
    // and the question really went unanswered: the DNS server saw it and said nothing
    expect(dns.asked('_svc.mute.test')).toBeGreaterThan(0);
  }, 60_000);

  it('a revoked key is no key: plaintext to bob goes again under automatic', async () => {
    await policy({ encryptSameOrg: 'automatic', encryptFederated: 'optional', encryptExternal: 'optional' });
    expect(await revokeCertificate(api.deps.store, pkiBackend(api.config), bobFingerprint, 'key compromise')).toBe(true);
    await expectSent(await plain(['bob@example.test']), ['bob@example.test']);
  });
});
