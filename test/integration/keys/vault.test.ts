import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import {
  createVault,
  masterKeyFromPassword,
  masterKeyFromPasskey,
  masterKeyFromRecoveryCode,
  passkeyWrap,
  random,
  unlockWithMasterKey,
  type VaultView,
} from '../../../lib/keys/client/index.js';
import { IssuedCertificateModel, type IssuedCertificate } from '../../../lib/pki/index.js';
import { KeyVaultModel, setEscrowScope } from '../../../lib/keys/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { TEST_ARGON2, keyTestValues } from './helpers.js';

// Spec: Key vault (per mailbox), 409 on stale expectedMasterKeyGeneration, mailbox-scoped 404s.

for (const backend of await sqlBackends()) {
  describe(`key vault on ${backend.name}`, () => {
    let api: TestApi;
    let s: Awaited<ReturnType<typeof seedUsers>>;
    let created: Awaited<ReturnType<typeof createVault>>;
    let vault: VaultView;
    const path = () => `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault`;

    beforeAll(async () => {
      api = await startTestApi(backend, await keyTestValues());
      s = await seedUsers(api);
    });
    afterAll(() => api?.close());

    it('starts unenrolled, enrols with a certificate issued in the same request, stores ciphertext only', async () => {
      const empty = await api.call('GET', path(), { token: s.alice });
      expect(empty.status).toBe(200);
      expect(empty.body).toMatchObject({ enrolled: false, masterKeyGeneration: 0, escrowScopeUid: null, wraps: [] });
      created = await createVault(s.aliceBox.uid, 'alice@example.test', 'correct horse', { argon2: TEST_ARGON2 });
      const r = await api.call('POST', `${path()}/enroll`, { token: s.alice, body: created.body });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      vault = r.body;
      expect(vault.masterKeyGeneration).toBe(1);
      expect(vault.encryptionCertificate).toContain('BEGIN CERTIFICATE');
      expect(vault.caCertificates?.[0]).toContain('BEGIN CERTIFICATE');
      expect(vault.wraps.map((w) => w.method).sort()).toEqual(['password', 'recovery codes']);
      const stored = await api.deps.store.repo<Record<string, unknown>>(KeyVaultModel).findOne({ mailboxUid: s.aliceBox.uid });
      const text = JSON.stringify(stored);
      expect(text).not.toContain(Buffer.from(created.keys.masterKey).toString('base64'));
      expect(text).not.toContain(Buffer.from(created.keys.encryptionPkcs8).toString('base64'));
      const issued = await api.deps.store.repo<IssuedCertificate>(IssuedCertificateModel).list({ filter: { mailboxUid: s.aliceBox.uid } });
      expect(issued).toHaveLength(1);
      expect(issued[0]!.backend).toBe('local');
      const audit = await api.deps.store
        .repo<{ action: string; actor: string }>(AuditEntryModel)
        .list({ filter: { resourceUid: s.aliceBox.uid, action: 'keyvault.enroll' } });
      expect(audit.map((a) => a.actor)).toEqual(['alice']);
    });

    it('unlocks with the password and with any recovery code, not with wrong ones', async () => {
      const mk = await masterKeyFromPassword(vault, 'correct horse');
      expect(Buffer.from(mk).equals(Buffer.from(created.keys.masterKey))).toBe(true);
      const keys = await unlockWithMasterKey(vault, mk);
      expect(Buffer.from(keys.encryptionPkcs8).equals(Buffer.from(created.keys.encryptionPkcs8))).toBe(true);
      for (const code of [created.recoveryCodes[0]!, created.recoveryCodes[7]!.toLowerCase()]) {
        expect(Buffer.from(await masterKeyFromRecoveryCode(vault, code)).equals(Buffer.from(mk))).toBe(true);
      }
      expect(created.recoveryCodes).toHaveLength(8);
      await expect(masterKeyFromPassword(vault, 'wrong')).rejects.toThrow(/unlock failed/);
      // a wrap is bound to its mailbox: the same bytes presented as another mailbox's vault do not open
      await expect(masterKeyFromPassword({ ...vault, mailboxUid: s.bobBox.uid }, 'correct horse')).rejects.toThrow(/unlock failed/);
    });

    it('adds a passkey wrap (WebAuthn PRF output) that unlocks; stale generation answers 409 api-108', async () => {
      const cred = random(32);
      const prfSalt = random(32);
      const prf = random(32);
      const wrap = await passkeyWrap(s.aliceBox.uid, 1, created.keys.masterKey, cred, prfSalt, prf, 'laptop');
      const stale = await api.call('POST', `${path()}/wraps`, { token: s.alice, body: { expectedMasterKeyGeneration: 0, wrap } });
      expect(stale.status).toBe(409);
      expect(stale.body.code).toBe('api-108');
      const r = await api.call('POST', `${path()}/wraps`, { token: s.alice, body: { expectedMasterKeyGeneration: 1, wrap } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      vault = r.body;
      expect(Buffer.from(await masterKeyFromPasskey(vault, cred, prf)).equals(Buffer.from(created.keys.masterKey))).toBe(true);
      await expect(masterKeyFromPasskey(vault, cred, random(32))).rejects.toThrow();
      const again = await api.call('POST', `${path()}/enroll`, { token: s.alice, body: created.body });
      expect(again.status).toBe(409);
      expect(again.body.code).toBe('api-108');
    });

    it('another user and an elevated administrator get 404 on the vault, reading and writing', async () => {
      for (const token of [s.bob, s.admin]) {
        expect((await api.call('GET', path(), { token })).status).toBe(404);
        expect(
          (await api.call('POST', `${path()}/wraps`, { token, body: { expectedMasterKeyGeneration: 1, wrap: vault.wraps[0] } })).status,
        ).toBe(404);
        expect((await api.call('POST', `${path()}/rekey`, { token, body: created.body })).status).toBe(404);
      }
      expect((await api.call('GET', '/api/mail/mailboxes/no-such-box/keyvault', { token: s.alice })).status).toBe(404);
      expect((await api.call('GET', path(), { token: null })).status).toBe(401);
    });

    it('refuses an escrow wrap while the mailbox has no escrow scope, accepts it once assigned', async () => {
      const wrap = {
        method: 'escrow',
        mailboxUid: s.aliceBox.uid,
        scopeUid: 'scope-1',
        envelope: Buffer.from(random(300)).toString('base64'),
      };
      const r = await api.call('POST', `${path()}/wraps`, { token: s.alice, body: { expectedMasterKeyGeneration: 1, wrap } });
      expect(r.status).toBe(409);
      expect(r.body.code).toBe('api-120');
      await setEscrowScope(api.deps.store, s.aliceBox.uid, 'scope-1');
      const other = await api.call('POST', `${path()}/wraps`, {
        token: s.alice,
        body: { expectedMasterKeyGeneration: 1, wrap: { ...wrap, scopeUid: 'scope-2' } },
      });
      expect(other.status).toBe(400);
      const ok = await api.call('POST', `${path()}/wraps`, { token: s.alice, body: { expectedMasterKeyGeneration: 1, wrap } });
      expect(ok.status).toBe(201);
      expect(ok.body.escrowScopeUid).toBe('scope-1');
      await setEscrowScope(api.deps.store, s.aliceBox.uid, null);
      vault = (await api.call('GET', path(), { token: s.alice })).body;
      expect(vault.wraps.some((w) => w.method === 'escrow')).toBe(false);
    });

    it.each([
      ['a wrap bound to another mailbox', (w: Record<string, unknown>, bob: string) => ({ ...w, mailboxUid: bob })],
      ['Argon2id memory below the minimum', (w: Record<string, unknown>) => ({ ...w, kdf: { ...(w.kdf as object), memoryKiB: 1024 } })],
      ['a short ciphertext', (w: Record<string, unknown>) => ({ ...w, ciphertext: Buffer.alloc(32).toString('base64') })],
      ['an unknown field', (w: Record<string, unknown>) => ({ ...w, extra: 1 })],
      ['an unknown method', (w: Record<string, unknown>) => ({ ...w, method: 'sms' })],
    ])('validates wraps strictly: %s → 400', async (_name, change) => {
      const pw = vault.wraps.find((w) => w.method === 'password')!;
      const { id: _id, masterKeyGeneration: _g, createdAt: _c, ...wrap } = pw as unknown as Record<string, unknown>;
      const r = await api.call('POST', `${path()}/wraps`, {
        token: s.alice,
        body: { expectedMasterKeyGeneration: 1, wrap: change(wrap, s.bobBox.uid) },
      });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('api-106');
    });

    it('recovery codes must be exactly eight', async () => {
      const rc = vault.wraps.find((w) => w.method === 'recovery codes') as unknown as { codes: unknown[] };
      const r = await api.call('POST', `${path()}/wraps`, {
        token: s.alice,
        body: {
          expectedMasterKeyGeneration: 1,
          wrap: { method: 'recovery codes', mailboxUid: s.aliceBox.uid, codes: rc.codes.slice(0, 7) },
        },
      });
      expect(r.status).toBe(400);
    });

    it('removes wraps but never the last unlock method', async () => {
      const passkey = vault.wraps.find((w) => w.method === 'passkey')!;
      const stale = await api.call('DELETE', `${path()}/wraps/${passkey.id}?expectedMasterKeyGeneration=7`, { token: s.alice });
      expect(stale.status).toBe(409);
      const r = await api.call('DELETE', `${path()}/wraps/${passkey.id}?expectedMasterKeyGeneration=1`, { token: s.alice });
      expect(r.status).toBe(200);
      vault = r.body;
      const rc = vault.wraps.find((w) => w.method === 'recovery codes')!;
      vault = (await api.call('DELETE', `${path()}/wraps/${rc.id}?expectedMasterKeyGeneration=1`, { token: s.alice })).body;
      const last = vault.wraps.find((w) => w.method === 'password')!;
      const refused = await api.call('DELETE', `${path()}/wraps/${last.id}?expectedMasterKeyGeneration=1`, { token: s.alice });
      expect(refused.status).toBe(409);
      expect(refused.body.code).toBe('api-120');
    });

    it('rekeys: generation 2, new certificate, the old one revoked in our records, old wraps gone', async () => {
      const old = vault.encryptionCertificate;
      const next = await createVault(s.aliceBox.uid, 'alice@example.test', 'new password', { current: 1, argon2: TEST_ARGON2 });
      const stale = await api.call('POST', `${path()}/rekey`, { token: s.alice, body: { ...next.body, expectedMasterKeyGeneration: 0 } });
      expect(stale.status).toBe(409);
      const r = await api.call('POST', `${path()}/rekey`, { token: s.alice, body: next.body });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      vault = r.body;
      expect(vault.masterKeyGeneration).toBe(2);
      expect(vault.encryptionCertificate).not.toBe(old);
      await expect(masterKeyFromPassword(vault, 'correct horse')).rejects.toThrow();
      expect(Buffer.from(await masterKeyFromPassword(vault, 'new password')).equals(Buffer.from(next.keys.masterKey))).toBe(true);
      const issued = await api.deps.store
        .repo<IssuedCertificate>(IssuedCertificateModel)
        .list({ filter: { mailboxUid: s.aliceBox.uid }, sort: [{ field: 'createdAt', dir: 'asc' }] });
      expect(issued).toHaveLength(2);
      expect(issued[0]!.revokedAt).toBeInstanceOf(Date);
      expect(issued[1]!.revokedAt ?? null).toBeNull();
    });

    it('a CSR whose signature does not verify is refused', async () => {
      const next = await createVault(s.bobBox.uid, 'bob@example.test', 'pw', { argon2: TEST_ARGON2 });
      const lines = next.body.encryptionCsr.split('\n');
      const i = lines.length - 4;
      lines[i] = lines[i]!.slice(0, 10) + (lines[i]![10] === 'A' ? 'B' : 'A') + lines[i]!.slice(11);
      const bad = await api.call('POST', `/api/mail/mailboxes/${s.bobBox.uid}/keyvault/enroll`, {
        token: s.bob,
        body: { ...next.body, encryptionCsr: lines.join('\n') },
      });
      expect(bad.status).toBe(400);
      const ok = await api.call('POST', `/api/mail/mailboxes/${s.bobBox.uid}/keyvault/enroll`, { token: s.bob, body: next.body });
      expect(ok.status).toBe(201);
    });

    it('a delegate the mailbox is shared with may read the vault but only owners change it (403 api-102)', async () => {
      const g = await api.call('POST', '/api/acls', {
        token: s.alice,
        body: { resource: 'mailboxes', resourceUid: s.aliceBox.uid, subject: 'user:bob', rights: ['read', 'write'] },
      });
      expect(g.status, JSON.stringify(g.body)).toBe(201);
      const r = await api.call('GET', path(), { token: s.bob });
      expect(r.status).toBe(200);
      expect(r.body.masterKeyGeneration).toBe(vault.masterKeyGeneration);
      const w = await api.call('POST', `${path()}/wraps`, {
        token: s.bob,
        body: {
          expectedMasterKeyGeneration: vault.masterKeyGeneration,
          wrap: {
            method: 'passkey',
            mailboxUid: s.aliceBox.uid,
            credentialId: 'A'.repeat(22),
            prfSalt: Buffer.alloc(32).toString('base64'),
            iv: Buffer.alloc(12).toString('base64'),
            ciphertext: Buffer.alloc(48).toString('base64'),
          },
        },
      });
      expect(w.status).toBe(403);
      expect(w.body.code).toBe('api-102');
    });

    it("key lookup answers a local mailbox's certificate from our records", async () => {
      const r = await api.call('GET', `/api/mail/mailboxes/${s.bobBox.uid}/keys/lookup?addr=Alice@Example.test`, { token: s.bob });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ address: 'alice@example.test', source: 'local', certificate: vault.encryptionCertificate, pin: null });
      const none = await api.call('GET', `/api/mail/mailboxes/${s.bobBox.uid}/keys/lookup?addr=nobody@example.test`, { token: s.bob });
      expect(none.status).toBe(404);
      expect(
        (await api.call('GET', `/api/mail/mailboxes/${s.aliceBox.uid}/keys/lookup?addr=alice@example.test`, { token: s.admin })).status,
      ).toBe(404);
    });
  });
}
