// Spec: Key escrow access. End to end with the reference client: the holders' scope key, a mailbox
// assigned, mail encrypted to its owner, a matter, M approvals, material released, the holders'
// client unwraps the master key and decrypts a message taken from a matter export — and every
// refusal path.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createVault,
  decryptAndVerify,
  encryptEntity,
  escrowWrap,
  masterKeyFromEscrow,
  masterKeyFromPassword,
  unlockWithMasterKey,
  type VaultView,
} from '../../../lib/keys/client/index.js';
import { ApprovalModel, EscrowAuditModel, exportFile, type ManifestMessage } from '../../../lib/escrow/index.js';
import { drainEscrowExports } from '../../../lib/jobs/escrow-export.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';
import { requirePrograms } from '../../helpers/peers.js';
import { keyTestValues, TEST_ARGON2 } from '../keys/helpers.js';
import { mboxrdUnquote } from '../../../lib/mail/index.js';
import { scopeKeyPair } from './scope-key.js';

const backends = await sqlBackends();
const withOpenssl = requirePrograms('openssl');

const der = (pem: string) => Buffer.from(pem.replace(/-----[^-]+-----/g, '').replace(/\s+/g, ''), 'base64');

describe.runIf(withOpenssl).each(backends)('key escrow on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const scopeKeys = scopeKeyPair();
  let h1: string;
  let h2: string;
  let h3: string;
  let staleAdmin: string;
  let scopeUid: string;
  let matterUid: string;
  let requestUid: string;
  let secretMessageUid: string;
  let scopeCertFromOwnerRoute: string;
  const day = 86_400_000;
  const PLAIN = 'Content-Type: text/plain; charset=utf-8\r\n\r\nThe merger closes on Friday.\r\n';

  beforeAll(async () => {
    api = await startTestApi(
      backend,
      await keyTestValues({
        'mail:escrow:audit_hmac_key': 'audit-key-0123456789',
        data_dir: mkdtempSync(join(tmpdir(), 'svcmail-escrow-')),
      }),
    );
    p = await seedUsers(api);
    [h1, h2, h3] = await Promise.all(['h1', 'h2', 'h3'].map((uid) => api.token({ uid, roles: ['admin'], elevated: true })));
    staleAdmin = await api.token({ uid: 'h1', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    const v = await createVault(p.aliceBox.uid, 'alice@example.test', 'alice-pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/enroll`, { token: p.alice, body: v.body })).status).toBe(
      201,
    );
  }, 60_000);
  afterAll(async () => api?.close());

  it('creates a scope (P-256 certificate, holders, M) and assigns a mailbox; the owner adds the escrow wrap', async () => {
    const bad = await api.call('POST', '/api/escrow/scopes', {
      token: h1,
      body: { name: 'x', certificatePem: scopeKeys.certPem, holders: ['h1'], approvalsRequired: 2 },
    });
    expect(bad.status).toBe(400);
    const scope = await api.call('POST', '/api/escrow/scopes', {
      token: h1,
      body: { name: 'Legal', certificatePem: scopeKeys.certPem, holders: ['h1', 'h2', 'h3'], approvalsRequired: 2 },
    });
    expect(scope.status).toBe(201);
    scopeUid = scope.body.uid;
    expect(
      (await api.call('POST', `/api/escrow/scopes/${scopeUid}/mailboxes`, { token: h1, body: { mailboxUid: p.aliceBox.uid } })).status,
    ).toBe(201);
    expect((await api.call('GET', `/api/escrow/scopes/${scopeUid}/mailboxes`, { token: h1 })).body).toEqual([
      { mailboxUid: p.aliceBox.uid, hasEscrowWrap: false },
    ]);
    // The owner's client learns the scope and its certificate from its own mailbox, never from an admin.
    const info = await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/escrow`, { token: p.alice });
    expect(info.status).toBe(200);
    expect(info.body).toMatchObject({
      mailboxUid: p.aliceBox.uid,
      scope: { uid: scopeUid, name: 'Legal' },
      hasEscrowWrap: false,
      needsEscrowWrap: true,
    });
    scopeCertFromOwnerRoute = info.body.scope.certificatePem;
    expect(scopeCertFromOwnerRoute).toBe(scopeKeys.certPem);
    const vault = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault`, { token: p.alice })).body as VaultView;
    const master = await masterKeyFromPassword(vault, 'alice-pw');
    const wrap = await escrowWrap(p.aliceBox.uid, info.body.masterKeyGeneration, master, info.body.scope.uid, scopeCertFromOwnerRoute);
    const added = await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/wraps`, {
      token: p.alice,
      body: { expectedMasterKeyGeneration: vault.masterKeyGeneration, wrap },
    });
    expect(added.status).toBe(201);
    expect((await api.call('GET', `/api/escrow/scopes/${scopeUid}/mailboxes`, { token: h1 })).body).toEqual([
      { mailboxUid: p.aliceBox.uid, hasEscrowWrap: true },
    ]);
    expect((await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/escrow`, { token: p.alice })).body).toMatchObject({
      hasEscrowWrap: true,
      needsEscrowWrap: false,
    });
    // Mail encrypted to alice arrives and is stored as ciphertext.
    const entity = await encryptEntity(PLAIN, [vault.encryptionCertificate!]);
    const msg = await deliverRaw(
      api,
      p.aliceBox.uid,
      Buffer.from(
        `From: ceo@example.test\r\nTo: alice@example.test\r\nSubject: confidential\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\n${entity}`,
      ),
    );
    expect(msg.smime).toBe('encrypted');
    secretMessageUid = msg.uid;
  });

  it('opens a matter and a request; one approval of two releases nothing', async () => {
    const matter = await api.call('POST', '/api/escrow/matters', {
      token: h1,
      body: {
        name: 'Case 7',
        scopeUid,
        custodians: [p.aliceBox.uid],
        from: new Date(Date.now() - day).toISOString(),
        to: new Date(Date.now() + day).toISOString(),
      },
    });
    expect(matter.status).toBe(201);
    matterUid = matter.body.uid;
    const request = await api.call('POST', '/api/escrow/access-requests', { token: h1, body: { matterUid, reason: 'court order 12/34' } });
    expect(request.status).toBe(201);
    requestUid = request.body.uid;
    expect(request.body).toMatchObject({ requester: 'h1', state: 'pending' });
    const m = await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 });
    expect(m.status).toBe(403);
    expect(m.body.message).toMatch(/1 valid approvals of 2/);
  });

  it('with M approvals releases the wrap; the holders unwrap the master key and decrypt the mail', async () => {
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: p.admin })).status).toBe(404); // not a holder: invisible
    const ok = await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h2 });
    expect(ok.body).toMatchObject({ state: 'approved' });
    const m = await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 });
    expect(m.status).toBe(200);
    const [item] = m.body.material;
    expect(item.escrowWrap).toMatchObject({ method: 'escrow', scopeUid });
    const scopeKey = await crypto.subtle.importKey('pkcs8', der(scopeKeys.keyPem), { name: 'ECDH', namedCurve: 'P-256' }, false, [
      'deriveBits',
    ]);
    const master = await masterKeyFromEscrow(item.escrowWrap, item.masterKeyGeneration, scopeKeys.certPem, scopeKey);
    const keys = await unlockWithMasterKey(
      {
        mailboxUid: item.mailboxUid,
        masterKeyGeneration: item.masterKeyGeneration,
        sealedSigningKey: item.sealedSigningKey,
        sealedEncryptionKey: item.sealedEncryptionKey,
      } as VaultView,
      master,
    );
    const hits = (await api.call('GET', `/api/escrow/matter-search?matterUid=${matterUid}`, { token: h1 })).body;
    expect(hits.map((h: { uid: string }) => h.uid)).toContain(secretMessageUid);
    // The ciphertext comes from a matter export the holders download, not from the owner's mailbox.
    const exp = await api.call('POST', '/api/escrow/matter-export-requests', { token: h2, body: { accessRequestUid: requestUid } });
    expect(exp.status).toBe(201);
    expect(exp.body).toMatchObject({ state: 'pending', matterUid, scopeUid, requester: 'h2' });
    expect((await drainEscrowExports(api.deps, 'test-worker')).built).toBe(1);
    const manifest = (await api.call('GET', `/api/escrow/matter-export-requests/${exp.body.uid}/manifest`, { token: h1 })).body as {
      messages: ManifestMessage[];
    };
    const entry = manifest.messages.find((m) => m.uid === secretMessageUid)!;
    expect(entry).toMatchObject({ mailboxUid: p.aliceBox.uid, smime: 'encrypted', subject: 'confidential' });
    const mbox = Buffer.from(
      await (
        await fetch(`${api.url}/api/escrow/matter-export-requests/${exp.body.uid}/download`, { headers: { authorization: `Bearer ${h1}` } })
      ).arrayBuffer(),
    );
    const raw = mboxrdUnquote(mbox.subarray(entry.offset, entry.offset + entry.length));
    expect(createHash('sha256').update(raw).digest('hex')).toBe(entry.sha256);
    expect(existsSync(exportFile(api.config, exp.body.uid, 'mbox'))).toBe(true);
    const opened = await decryptAndVerify(raw.toString('latin1'), { certPem: item.encryptionCertificate, key: keys.encryptionKey });
    expect(opened.entity).toContain('The merger closes on Friday.');
  });

  it('refuses when an approval has aged past the TTL, when an approver stops being a holder, and once the matter is closed', async () => {
    const approvals = api.deps.store.repo<{ holder: string; approvedAt: Date; requestUid: string }>(ApprovalModel);
    const h2Approval = (await approvals.list({ filter: { requestUid, holder: 'h2' } }))[0];
    await approvals.update(h2Approval.uid, { approvedAt: new Date(Date.now() - 73 * 3600_000) });
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(403);
    await approvals.update(h2Approval.uid, { approvedAt: new Date() });
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(200);
    // h2 stops being a holder (a scope change approved by M=2 holders): its approval no longer counts.
    const change = await api.call('POST', `/api/escrow/scopes/${scopeUid}/changes`, {
      token: h1,
      body: { holders: ['h1', 'h3'], reason: 'h2 left the legal team' },
    });
    expect(change.body.state).toBe('pending');
    expect((await api.call('POST', `/api/escrow/scopes/${scopeUid}/changes/${change.body.uid}/approve`, { token: h3 })).body.state).toBe(
      'applied',
    );
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(403);
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h3 })).body.state).toBe('approved');
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(200);
    const matter = (await api.call('GET', `/api/escrow/matters/${matterUid}`, { token: h1 })).body;
    expect(
      (await api.call('PUT', `/api/escrow/matters/${matterUid}/state`, { token: h1, body: { value: 'closed', version: matter.version } }))
        .status,
    ).toBe(404); // server-kept: only /close closes
    expect((await api.call('POST', `/api/escrow/matters/${matterUid}/close`, { token: h1 })).body.state).toBe('closed');
    const closed = await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 });
    expect(closed.status).toBe(409);
    expect(closed.body.code).toBe('api-120');
    expect((await api.call('POST', '/api/escrow/access-requests', { token: h1, body: { matterUid, reason: 'again' } })).status).toBe(409);
    expect((await api.call('POST', `/api/escrow/matters/${matterUid}/close`, { token: h1 })).status).toBe(409);
  });

  it('needs a trusted role with fresh elevation on every escrow route', async () => {
    for (const [token, code] of [
      [p.alice, 'api-103'],
      [staleAdmin, 'api-104'],
    ] as const) {
      for (const [method, path] of [
        ['GET', '/api/escrow/scopes'],
        ['GET', `/api/escrow/access-requests/${requestUid}/material`],
        ['GET', '/api/escrow/audit-log'],
        ['POST', `/api/escrow/access-requests/${requestUid}/approve`],
      ]) {
        const r = await api.call(method, path, { token });
        expect(r.status, `${method} ${path}`).toBe(403);
        expect(r.body.code).toBe(code);
      }
    }
  });

  it('keeps a keyed audit chain that verifies, and finds the first tampered entry', async () => {
    const log = (await api.call('GET', '/api/escrow/audit-log?limit=1000', { token: h1 })).body;
    expect(log.map((e: { action: string }) => e.action)).toEqual(
      expect.arrayContaining([
        'scope.create',
        'scope.assign',
        'matter.create',
        'request.create',
        'request.approve',
        'material.refused',
        'material.release',
        'matter.search',
        'scope.change.request',
        'scope.change.apply',
        'export.create',
        'export.ready',
        'export.download',
        'matter.close',
      ]),
    );
    expect(log.every((e: { alg: string }) => e.alg === 'hmac-sha256')).toBe(true);
    expect((await api.call('GET', '/api/escrow/audit-log/verify', { token: h1 })).body).toEqual({ ok: true, entries: log.length });
    const victim = log[3];
    await api.deps.store
      .repo<{ details: Record<string, unknown> }>(EscrowAuditModel)
      .update(victim.uid, { details: { ...victim.details, reason: 'nothing to see' } });
    expect((await api.call('GET', '/api/escrow/audit-log/verify', { token: h1 })).body).toMatchObject({
      ok: false,
      brokenAt: { seq: victim.seq, reason: expect.stringMatching(/does not match its hash/) },
    });
  });
});
