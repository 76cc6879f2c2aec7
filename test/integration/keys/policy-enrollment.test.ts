import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { createVault, type CreatedVault } from '../../../lib/keys/client/index.js';
import { checkSendPolicy, readPolicy } from '../../../lib/keys/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { LocalPki, parseCsr } from '../../../lib/pki/index.js';
import { TEST_ARGON2, keyTestValues } from './helpers.js';

// Spec: Encryption policy; Signing-certificate enrolment (manual path, rekey supersedes).

for (const backend of await sqlBackends()) {
  describe(`encryption policy and signing enrolment on ${backend.name}`, () => {
    let api: TestApi;
    let s: Awaited<ReturnType<typeof seedUsers>>;
    let v: CreatedVault;

    beforeAll(async () => {
      api = await startTestApi(backend, await keyTestValues());
      s = await seedUsers(api);
      v = await createVault(s.aliceBox.uid, 'alice@example.test', 'pw', { argon2: TEST_ARGON2 });
      expect(
        (await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/enroll`, { token: s.alice, body: v.body })).status,
      ).toBe(201);
    });
    afterAll(() => api?.close());

    it('policy: default optional, readable by any signed-in user, not anonymously', async () => {
      const r = await api.call('GET', '/api/system/encryption-policy', { token: s.bob });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ encryptSameOrg: 'optional', encryptFederated: 'optional', encryptExternal: 'optional', version: 0 });
      expect((await api.call('GET', '/api/system/encryption-policy', { token: null })).status).toBe(401);
    });

    it('policy: writable only by administrators with fresh elevation; every change audited', async () => {
      expect(
        (await api.call('PUT', '/api/system/encryption-policy', { token: s.bob, body: { encryptSameOrg: 'automatic' } })).body.code,
      ).toBe('api-103');
      const stale = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
      expect(
        (await api.call('PUT', '/api/system/encryption-policy', { token: stale, body: { encryptSameOrg: 'automatic' } })).body.code,
      ).toBe('api-104');
      expect((await api.call('PUT', '/api/system/encryption-policy', { token: s.admin, body: { encryptSameOrg: 'always' } })).status).toBe(
        400,
      );
      const r = await api.call('PUT', '/api/system/encryption-policy', {
        token: s.admin,
        body: { encryptSameOrg: 'automatic', encryptExternal: 'prohibited' },
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ encryptSameOrg: 'automatic', encryptFederated: 'optional', encryptExternal: 'prohibited' });
      const conflict = await api.call('PUT', '/api/system/encryption-policy', {
        token: s.admin,
        body: { encryptFederated: 'automatic', version: r.body.version - 1 },
      });
      expect(conflict.status).toBe(409);
      const audit = await api.deps.store
        .repo<{ action: string; actor: string; before: Record<string, unknown>; after: Record<string, unknown> }>(AuditEntryModel)
        .list({ filter: { action: 'encryption-policy.update' } });
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({
        actor: 'root',
        before: { encryptSameOrg: 'optional' },
        after: { encryptSameOrg: 'automatic', encryptExternal: 'prohibited' },
      });
      const policy = await readPolicy(api.deps);
      expect(() => checkSendPolicy(policy, [{ address: 'bob@example.test', class: 'sameOrg', hasKey: true }], false)).toThrow(
        /requires encryption/,
      );
      expect(() => checkSendPolicy(policy, [{ address: 'bob@example.test', class: 'sameOrg', hasKey: false }], false)).not.toThrow();
      expect(() => checkSendPolicy(policy, [{ address: 'x@gmail.example', class: 'external', hasKey: true }], true)).toThrow(/prohibits/);
      expect(() => checkSendPolicy(policy, [{ address: 'x@peer.example', class: 'federated', hasKey: true }], false)).not.toThrow();
    });

    it('signing enrolment, manual: request with the vault signing key, administrators complete by hand, installed into the vault', async () => {
      const status = await api.call('GET', '/api/system/signing-enrollment', { token: s.alice });
      expect(status.body).toMatchObject({ backend: 'manual', configured: 'manual', requests: [] });
      // a CSR for another key is refused
      const bad = await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/signing-enrollment`, {
        token: s.alice,
        body: { expectedMasterKeyGeneration: 1, csr: v.keys.encryptionCsr },
      });
      expect(bad.status).toBe(400);
      expect(
        (
          await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/signing-enrollment`, {
            token: s.bob,
            body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
          })
        ).status,
      ).toBe(404);
      const req = await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/signing-enrollment`, {
        token: s.alice,
        body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
      });
      expect(req.status, JSON.stringify(req.body)).toBe(201);
      expect(req.body.state).toBe('requested');
      expect(req.body).not.toHaveProperty('claimedBy');
      expect((await api.call('GET', '/api/admin/signing-enrollments', { token: s.bob })).status).toBe(403);
      const list = await api.call('GET', '/api/admin/signing-enrollments?state=requested', { token: s.admin });
      expect(list.body.map((r: { uid: string }) => r.uid)).toContain(req.body.uid);
      const pki = new LocalPki(api.config.get('mail:pki:local_ca:dir'), 30);
      const wrongKey = await pki.issue({ csr: await parseCsr(v.keys.encryptionCsr), emails: ['alice@example.test'], kind: 'signing' });
      expect(
        (
          await api.call('POST', `/api/admin/signing-enrollments/${req.body.uid}/complete`, {
            token: s.admin,
            body: { certificate: wrongKey.certPem },
          })
        ).status,
      ).toBe(400);
      const cert = await pki.issue({ csr: await parseCsr(v.keys.signingCsr), emails: ['alice@example.test'], kind: 'signing' });
      const done = await api.call('POST', `/api/admin/signing-enrollments/${req.body.uid}/complete`, {
        token: s.admin,
        body: { certificate: cert.certPem },
      });
      expect(done.status, JSON.stringify(done.body)).toBe(200);
      expect(done.body.state).toBe('installed');
      const vault = await api.call('GET', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault`, { token: s.alice });
      expect(vault.body.signingCertificate).toBe(cert.certPem);
      expect(
        (
          await api.call('POST', `/api/admin/signing-enrollments/${req.body.uid}/complete`, {
            token: s.admin,
            body: { certificate: cert.certPem },
          })
        ).status,
      ).toBe(409);
      const mine = await api.call('GET', '/api/system/signing-enrollment', { token: s.alice });
      expect(mine.body.requests[0].state).toBe('installed');
      expect((await api.call('GET', '/api/system/signing-enrollment', { token: s.bob })).body.requests).toEqual([]);
    });

    it('a certificate arriving after a rekey is not installed: the request is superseded', async () => {
      const req = await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/signing-enrollment`, {
        token: s.alice,
        body: { expectedMasterKeyGeneration: 1, csr: v.keys.signingCsr },
      });
      expect(req.status).toBe(201);
      const next = await createVault(s.aliceBox.uid, 'alice@example.test', 'pw2', { current: 1, argon2: TEST_ARGON2 });
      expect(
        (await api.call('POST', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault/rekey`, { token: s.alice, body: next.body })).status,
      ).toBe(200);
      const pki = new LocalPki(api.config.get('mail:pki:local_ca:dir'), 30);
      const cert = await pki.issue({ csr: await parseCsr(v.keys.signingCsr), emails: ['alice@example.test'], kind: 'signing' });
      const done = await api.call('POST', `/api/admin/signing-enrollments/${req.body.uid}/complete`, {
        token: s.admin,
        body: { certificate: cert.certPem },
      });
      expect(done.status).toBe(200);
      expect(done.body.state).toBe('superseded');
      const vault = await api.call('GET', `/api/mail/mailboxes/${s.aliceBox.uid}/keyvault`, { token: s.alice });
      expect(vault.body.signingCertificate).toBeNull();
    });
  });
}
