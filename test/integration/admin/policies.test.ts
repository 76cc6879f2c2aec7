// /api/system mailbox-policy, retention-policy, branding and setup over real HTTP on both SQL
// backends: who reads, who writes (trusted role + fresh elevation), audit with before/after, and
// the effects (default quota and receipt settings, alias limit, plus-addressing).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { existsSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setupState } from '../../../lib/admin/index.js';
import { branding, mailboxPolicy, retentionPolicy } from '../../../lib/settings/index.js';
import { AuditEntryModel, type AuditEntry } from '../../../lib/audit/index.js';
import { MailboxModel, type Mailbox } from '../../../lib/mail/index.js';
import { ensureLocalCa, localCaDir } from '../../../lib/pki/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { ingestFixture, INGEST_SECRET, type IngestFixture } from '../ingest/setup.js';

const PNG_1PX = 'data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';

for (const backend of await sqlBackends()) {
  describe(`system policies, branding and setup on ${backend.name}`, () => {
    let fx: IngestFixture;
    let admin: string;
    let plainAdmin: string;
    let staleAdmin: string;
    let alice: string;
    const audit = (action: string) =>
      fx.api.deps.store.repo<AuditEntry>(AuditEntryModel).list({ filter: { action }, sort: [{ field: 'createdAt', dir: 'asc' }] });
    const call = (method: string, path: string, token: string | null, body?: unknown) => fx.api.call(method, path, { token, body });

    beforeAll(async () => {
      fx = await ingestFixture(backend);
      ({ admin, alice } = fx.users);
      plainAdmin = await fx.api.token({ uid: 'root', roles: ['admin'] });
      staleAdmin = await fx.api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    }, 60_000);
    afterAll(async () => fx?.close());

    describe.each([
      [
        'mailbox-policy',
        {
          defaultQuotaBytes: 0,
          maxAliases: 100,
          plusAddressing: true,
          defaultReceiptSettings: { internal: 'ask', federated: 'ask', external: 'never' },
        },
        { maxAliases: 2 },
      ],
      [
        'retention-policy',
        { inboxDays: null, sentDays: null, deletedDays: null, junkDays: null, archiveDays: null, userFoldersDays: null },
        { junkDays: 30 },
      ],
    ])('%s', (name, defaults, change) => {
      it('answers the defaults (version 0) to any signed-in user, 401 without a token', async () => {
        const r = await call('GET', `/api/system/${name}`, alice);
        expect(r.status).toBe(200);
        expect(r.body).toEqual({ ...defaults, version: 0, updatedAt: null });
        expect((await call('GET', `/api/system/${name}`, null)).body.code).toBe('api-100');
      });

      it.each([
        ['a plain user', () => alice, 'api-103'],
        ['an admin without elevation', () => plainAdmin, 'api-104'],
        ['an admin with stale elevation', () => staleAdmin, 'api-104'],
      ])('refuses a change by %s (403 %s) and stores nothing', async (_who, token, code) => {
        const r = await call('PUT', `/api/system/${name}`, token(), change);
        expect(r.status).toBe(403);
        expect(r.body.code).toBe(code);
        const model = name === 'mailbox-policy' ? mailboxPolicy.model : retentionPolicy.model;
        expect(await fx.api.deps.store.repo(model).count()).toBe(0);
      });

      it('takes a change from an elevated admin, refuses a stale version (409) and bad values (400), audits before/after', async () => {
        expect((await call('PUT', `/api/system/${name}`, admin, { nonsense: 1 })).status).toBe(400);
        const r = await call('PUT', `/api/system/${name}`, admin, { ...change, version: 0 });
        expect(r.status, JSON.stringify(r.body)).toBe(200);
        expect(r.body).toMatchObject({ ...defaults, ...change, version: 1 });
        expect((await call('GET', `/api/system/${name}`, alice)).body).toMatchObject({ ...change, version: 1 });
        expect((await call('PUT', `/api/system/${name}`, admin, { ...change, version: 0 })).status).toBe(409);
        const entries = await audit(`${name}.update`);
        expect(entries).toHaveLength(1);
        expect(entries[0]).toMatchObject({
          actor: 'root',
          resource: name,
          before: { ...defaults, version: 0 },
          after: { ...change, version: 1 },
        });
      });
    });

    it('retention-policy refuses ages outside 1..36500 days and keeps the stored value', async () => {
      for (const bad of [{ inboxDays: 0 }, { sentDays: -3 }, { junkDays: 1.5 }, { archiveDays: 40_000 }, { junkDays: '30' }]) {
        const r = await call('PUT', '/api/system/retention-policy', admin, bad);
        expect(r.status, JSON.stringify(bad)).toBe(400);
        expect(r.body.code).toBe('api-106');
      }
      expect((await call('GET', '/api/system/retention-policy', alice)).body).toMatchObject({ junkDays: 30, inboxDays: null, version: 1 });
    });

    it('mailbox-policy: default quota and receipt settings apply to new mailboxes created without them; the alias limit holds on create and update', async () => {
      const p = await call('PUT', '/api/system/mailbox-policy', admin, {
        defaultQuotaBytes: 5_000_000,
        defaultReceiptSettings: { internal: 'always', federated: 'never', external: 'never' },
      });
      expect(p.status, JSON.stringify(p.body)).toBe(200);
      const a = await call('POST', '/api/mail/mailboxes', admin, { address: 'carol@example.test', owners: ['carol'] });
      expect(a.status, JSON.stringify(a.body)).toBe(201);
      const b = await call('POST', '/api/mail/mailboxes', admin, {
        address: 'dave@example.test',
        owners: ['dave'],
        quotaBytes: 0,
        receiptSettings: { internal: 'never', federated: 'ask', external: 'ask' },
      });
      expect(b.status).toBe(201);
      const repo = fx.api.deps.store.repo<Mailbox>(MailboxModel);
      expect(await repo.get(a.body.uid)).toMatchObject({
        quotaBytes: 5_000_000,
        receiptSettings: { internal: 'always', federated: 'never', external: 'never' },
      });
      expect(await repo.get(b.body.uid)).toMatchObject({
        quotaBytes: 0,
        receiptSettings: { internal: 'never', federated: 'ask', external: 'ask' },
      });
      // maxAliases is 2 since the change above
      const three = ['e1@example.test', 'e2@example.test', 'e3@example.test'];
      const c = await call('POST', '/api/mail/mailboxes', admin, { address: 'erin@example.test', owners: ['erin'], aliases: three });
      expect(c.status).toBe(400);
      expect(c.body.message).toMatch(/at most 2 aliases/);
      expect(await repo.findOne({ address: 'erin@example.test' })).toBeNull();
      const upd = await call('PUT', `/api/mail/mailboxes/${a.body.uid}?scope=admin`, admin, { aliases: three, version: a.body.version });
      expect(upd.status).toBe(400);
      expect((await repo.get(a.body.uid))!.aliases).toEqual([]);
      expect(
        (await call('PUT', `/api/mail/mailboxes/${a.body.uid}?scope=admin`, admin, { aliases: three.slice(0, 2), version: a.body.version }))
          .status,
      ).toBe(200);
    });

    it('mailbox-policy plusAddressing off: user+tag@ no longer resolves (the setting alone is not enough)', async () => {
      const resolve = (rcpt: string) =>
        fetch(`${fx.api.url}/internal/mta/resolve?rcpt=${encodeURIComponent(rcpt)}`, {
          headers: { authorization: `Bearer ${INGEST_SECRET}` },
        });
      expect((await resolve('alice+news@example.test')).status).toBe(200);
      const cur = (await call('GET', '/api/system/mailbox-policy', alice)).body;
      expect((await call('PUT', '/api/system/mailbox-policy', admin, { plusAddressing: false, version: cur.version })).status).toBe(200);
      expect((await resolve('alice+news@example.test')).status).toBe(404);
      expect((await resolve('alice@example.test')).status).toBe(200);
      const r = await fx.deliver({
        to: ['alice+news@example.test'],
        raw: 'From: x@remote.example\r\nTo: alice+news@example.test\r\nSubject: tagged\r\n\r\nhi\r\n',
      });
      expect(r.status).toBe(202);
      expect(r.body).toMatchObject({ queued: 0, results: [{ recipient: 'alice+news@example.test', status: 'unknown' }] });
      await call('PUT', '/api/system/mailbox-policy', admin, { plusAddressing: true });
      expect((await resolve('alice+news@example.test')).status).toBe(200);
    });

    it('branding: public read, elevated write, colours and logo validated, logo size limited, audited with a digest of the logo', async () => {
      const anon = await call('GET', '/api/system/branding', null);
      expect(anon.status).toBe(200);
      expect(anon.body).toMatchObject({ name: 'svcmail', logo: null, primaryColor: '#1f6feb', version: 0 });
      expect((await call('PUT', '/api/system/branding', null, { name: 'x' })).status).toBe(401);
      expect((await call('PUT', '/api/system/branding', plainAdmin, { name: 'x' })).body.code).toBe('api-104');
      for (const bad of [
        { primaryColor: 'red' },
        { accentColor: '#12345' },
        { logo: 'http://cdn.example/logo.png' },
        { logo: 'data:image/svg+xml;base64,PHN2Zz48L3N2Zz4=' },
        { logo: 'javascript:alert(1)' },
        { name: '<b>x</b>' },
      ]) {
        const r = await call('PUT', '/api/system/branding', admin, bad);
        expect(r.status, JSON.stringify(bad)).toBe(400);
      }
      const big = `data:image/png;base64,${Buffer.alloc(300_000, 1).toString('base64')}`;
      const tooBig = await call('PUT', '/api/system/branding', admin, { logo: big });
      expect(tooBig.status).toBe(400);
      expect(tooBig.body.message).toMatch(/at most 262144/);
      const ok = await call('PUT', '/api/system/branding', admin, {
        name: 'Example Mail',
        logo: PNG_1PX,
        primaryColor: '#ABCDEF',
        accentColor: '#f00',
      });
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(ok.body).toMatchObject({ name: 'Example Mail', logo: PNG_1PX, primaryColor: '#abcdef', accentColor: '#f00', version: 1 });
      expect((await call('GET', '/api/system/branding', null)).body).toMatchObject({ name: 'Example Mail', logo: PNG_1PX });
      const url = await call('PUT', '/api/system/branding', admin, { logo: 'https://cdn.example/logo.png', version: 1 });
      expect(url.body.logo).toBe('https://cdn.example/logo.png');
      const entries = await audit('branding.update');
      expect(entries).toHaveLength(2);
      expect(entries[0].after).toMatchObject({
        name: 'Example Mail',
        logo: expect.stringMatching(/^data:image\/png;base64 sha256:[0-9a-f]{64}$/),
      });
      expect(JSON.stringify(entries)).not.toContain(PNG_1PX.slice(30));
      expect(await fx.api.deps.store.repo(branding.model).count()).toBe(1);
    });

    it('setup: admins read the first-run state; steps are marked with fresh elevation, checked and audited', async () => {
      expect((await call('GET', '/api/system/setup', alice)).body.code).toBe('api-103');
      expect((await call('GET', '/api/system/setup', plainAdmin)).body.code).toBe('api-104');
      const caDir = localCaDir(fx.api.config);
      mkdirSync(caDir, { recursive: true });
      const s0 = await call('GET', '/api/system/setup', staleAdmin); // a read needs no fresh elevation
      expect(s0.status).toBe(200);
      expect(s0.body).toMatchObject({
        complete: false,
        version: 0,
        ca: { backend: 'local' },
        configuration: { ingestSecretChanged: true },
      });
      expect(s0.body.domains.map((d: { name: string }) => d.name)).toEqual(['example.test']);
      expect(s0.body.domains[0]).toMatchObject({ verified: true, dkimPublicKey: false, dkimKeyFile: false });
      expect(s0.body.dkim.missing).toEqual(['example.test']);
      expect(s0.body.steps.every((s: { done: boolean }) => !s.done)).toBe(true);
      expect(s0.body.ca.present).toBe(existsSync(join(caDir, 'ca.crt')));
      await ensureLocalCa(caDir);
      expect((await call('GET', '/api/system/setup', admin)).body.ca).toMatchObject({ present: true });

      expect((await call('POST', '/api/system/setup', staleAdmin, { complete: ['domains'] })).body.code).toBe('api-104');
      expect((await call('POST', '/api/system/setup', admin, { complete: ['nonsense'] })).status).toBe(400);
      expect((await call('POST', '/api/system/setup', admin, {})).status).toBe(400);
      const one = await call('POST', '/api/system/setup', admin, { complete: ['domains', 'signin'] });
      expect(one.status, JSON.stringify(one.body)).toBe(200);
      expect(one.body.steps.filter((s: { done: boolean }) => s.done).map((s: { step: string }) => s.step)).toEqual(['signin', 'domains']);
      expect(one.body.complete).toBe(false);
      const all = await call('POST', '/api/system/setup', admin, {
        complete: ['dns', 'mailboxes', 'policies', 'branding'],
        version: one.body.version,
      });
      expect(all.body).toMatchObject({ complete: true, completedAt: expect.any(String) });
      expect((await call('POST', '/api/system/setup', admin, { reopen: ['dns'], version: one.body.version })).status).toBe(409);
      const reopened = await call('POST', '/api/system/setup', admin, { reopen: ['dns'] });
      expect(reopened.body).toMatchObject({ complete: false, completedAt: null });
      const stored = await fx.api.deps.store.repo<{ completedSteps: string[] }>(setupState.model).list();
      expect(stored).toHaveLength(1);
      expect(stored[0].completedSteps).toEqual(['signin', 'domains', 'mailboxes', 'policies', 'branding']);
      const entries = await audit('setup.update');
      expect(entries).toHaveLength(3);
      expect(entries[2]).toMatchObject({
        actor: 'root',
        before: { completedSteps: ['signin', 'domains', 'dns', 'mailboxes', 'policies', 'branding'] },
        after: { completedSteps: ['signin', 'domains', 'mailboxes', 'policies', 'branding'] },
      });
    });
  });
}

describe('setup refuses steps whose outcome does not hold', async () => {
  const [backend] = await sqlBackends();
  it('domains and mailboxes need a domain and a mailbox (409 api-120)', async () => {
    const { startTestApi } = await import('../../helpers/api.js');
    const api = await startTestApi(backend);
    try {
      const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
      for (const step of ['domains', 'dns', 'mailboxes']) {
        const r = await api.call('POST', '/api/system/setup', { token: admin, body: { complete: [step] } });
        expect(r.status).toBe(409);
        expect(r.body.code).toBe('api-120');
      }
      expect(await api.deps.store.repo(setupState.model).count()).toBe(0);
    } finally {
      await api.close();
    }
  });
});
