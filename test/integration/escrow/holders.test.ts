// Spec: Escrow records, Key escrow access — holders act only on scopes they hold. Every escrow
// route needs an elevated admin; on top of that only the holders of a scope see and use it, its
// matters, requests, changes, exports, mailbox assignments and audit entries. Holders and M change
// only with M approvals; the certificate never changes. Negative tests for each rule, with the
// stored state checked.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  AccessRequestModel,
  EscrowAuditModel,
  EscrowScopeModel,
  MatterModel,
  ScopeChangeModel,
  type EscrowAuditEntry,
  type Scope,
} from '../../../lib/escrow/index.js';
import { KeyVaultModel } from '../../../lib/keys/index.js';
import { createVault, random } from '../../../lib/keys/client/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { requirePrograms } from '../../helpers/peers.js';
import { keyTestValues, TEST_ARGON2 } from '../keys/helpers.js';
import { scopeKeyPair } from './scope-key.js';

const backends = await sqlBackends();
const withOpenssl = requirePrograms('openssl');
const scopeCert = (cn: string) => scopeKeyPair(cn).certPem;

describe.runIf(withOpenssl).each(backends)('escrow holders on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let h1: string;
  let h2: string;
  let h3: string;
  let h4: string;
  let nobody: string;
  /** root (p.admin) holds scope T only. */
  let S: string;
  let T: string;
  let matterUid: string;
  let requestUid: string;
  const cert = scopeCert('Legal');
  const day = 86_400_000;
  const audit = async () =>
    api.deps.store.repo<EscrowAuditEntry>(EscrowAuditModel).list({ sort: [{ field: 'seq', dir: 'asc' }], limit: 10_000 });
  const scopeRow = async (uid: string) => (await api.deps.store.repo<Scope>(EscrowScopeModel).get(uid))!;

  beforeAll(async () => {
    api = await startTestApi(backend, await keyTestValues({ data_dir: mkdtempSync(join(tmpdir(), 'svcmail-escrow-')) }));
    p = await seedUsers(api);
    [h1, h2, h3, h4, nobody] = await Promise.all(
      ['h1', 'h2', 'h3', 'h4', 'nobody'].map((uid) => api.token({ uid, roles: ['admin'], elevated: true })),
    );
    const v = await createVault(p.aliceBox.uid, 'alice@example.test', 'alice-pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/enroll`, { token: p.alice, body: v.body })).status).toBe(
      201,
    );
  }, 60_000);
  afterAll(async () => api?.close());

  it('creating a scope: the creator must be a holder, M at least mail:escrow:min_approvals and at most the holders', async () => {
    for (const [body, path] of [
      [{ name: 'x', certificatePem: cert, holders: ['h2', 'h3'], approvalsRequired: 2 }, 'holders'],
      [{ name: 'x', certificatePem: cert, holders: ['h1', 'h2'], approvalsRequired: 1 }, 'approvalsRequired'],
      [{ name: 'x', certificatePem: cert, holders: ['h1'], approvalsRequired: 2 }, 'approvalsRequired'],
      [{ name: 'x', certificatePem: 'not a cert', holders: ['h1', 'h2'], approvalsRequired: 2 }, 'certificatePem'],
    ] as const) {
      const r = await api.call('POST', '/api/escrow/scopes', { token: h1, body });
      expect(r.status).toBe(400);
      expect(r.body.details.map((d: { path: string }) => d.path)).toContain(path);
    }
    expect(await api.deps.store.repo(EscrowScopeModel).count()).toBe(0);
    const s = await api.call('POST', '/api/escrow/scopes', {
      token: h1,
      body: { name: 'Legal', certificatePem: cert, holders: ['h1', 'h2', 'h3'], approvalsRequired: 2 },
    });
    expect(s.status).toBe(201);
    S = s.body.uid;
    const t = await api.call('POST', '/api/escrow/scopes', {
      token: p.admin,
      body: { name: 'HR', certificatePem: scopeCert('HR'), holders: ['root', 'h4'], approvalsRequired: 2 },
    });
    T = t.body.uid;
    expect((await audit()).filter((e) => e.action === 'scope.create').map((e) => [e.scopeUid, e.actor])).toEqual([
      [S, 'h1'],
      [T, 'root'],
    ]);
  });

  it('a non-holder neither sees nor changes a scope (404), even as an elevated admin', async () => {
    const list = await api.call('GET', '/api/escrow/scopes', { token: p.admin });
    expect(list.body.map((s: { uid: string }) => s.uid)).toEqual([T]);
    expect((await api.call('GET', `/api/escrow/scopes?uid=${S}`, { token: p.admin })).body).toEqual([]);
    expect((await api.call('HEAD', '/api/escrow/scopes', { token: nobody })).headers.get('x-total-count')).toBe('0');
    expect((await api.call('GET', `/api/escrow/scopes/${S}`, { token: p.admin })).status).toBe(404);
    expect((await api.call('PUT', `/api/escrow/scopes/${S}`, { token: p.admin, body: { version: 1, name: 'mine now' } })).status).toBe(404);
    expect((await api.call('DELETE', `/api/escrow/scopes/${S}?version=1`, { token: p.admin })).status).toBe(404);
    for (const [method, path, body] of [
      ['GET', `/api/escrow/scopes/${S}/mailboxes`, undefined],
      ['POST', `/api/escrow/scopes/${S}/mailboxes`, { mailboxUid: p.bobBox.uid }],
      ['GET', `/api/escrow/scopes/${S}/changes`, undefined],
      ['POST', `/api/escrow/scopes/${S}/changes`, { holders: ['root', 'h1'], reason: 'take over' }],
    ] as const) {
      expect((await api.call(method, path, { token: p.admin, body })).status, `${method} ${path}`).toBe(404);
    }
    expect(await scopeRow(S)).toMatchObject({ name: 'Legal', holders: ['h1', 'h2', 'h3'], approvalsRequired: 2, version: 1 });
    expect(await api.deps.store.repo(ScopeChangeModel).count()).toBe(0);
    // Refusals on an existing scope are audited for its holders.
    expect((await audit()).filter((e) => e.action === 'access.denied' && e.scopeUid === S).map((e) => e.details.attempted)).toEqual([
      'scope.assign',
      'scope.change.request',
    ]);
  });

  it('a holder alone cannot rewrite holders, M or the certificate; PUT changes the name only', async () => {
    for (const body of [{ holders: ['h1'] }, { approvalsRequired: 1 }, { certificatePem: scopeCert('Evil') }]) {
      const r = await api.call('PUT', `/api/escrow/scopes/${S}`, { token: h1, body: { version: 1, ...body } });
      expect(r.status).toBe(400);
    }
    expect((await api.call('PUT', `/api/escrow/scopes/${S}/holders`, { token: h1, body: { version: 1, value: ['h1'] } })).status).toBe(404);
    const renamed = await api.call('PUT', `/api/escrow/scopes/${S}`, { token: h1, body: { version: 1, name: 'Legal hold' } });
    expect(renamed.status).toBe(200);
    expect(await scopeRow(S)).toMatchObject({
      name: 'Legal hold',
      holders: ['h1', 'h2', 'h3'],
      approvalsRequired: 2,
      certificatePem: cert,
    });
    expect((await audit()).at(-1)).toMatchObject({ action: 'scope.update', actor: 'h1', scopeUid: S });
  });

  it('holders and M change only with M approvals; stale and withdrawn proposals never apply', async () => {
    const tooFew = await api.call('POST', `/api/escrow/scopes/${S}/changes`, { token: h1, body: { holders: ['h1'], reason: 'solo' } });
    expect(tooFew.status).toBe(400); // M=2 > one holder
    const lower = await api.call('POST', `/api/escrow/scopes/${S}/changes`, {
      token: h1,
      body: { approvalsRequired: 1, reason: 'faster' },
    });
    expect(lower.status).toBe(400); // below mail:escrow:min_approvals
    const add = await api.call('POST', `/api/escrow/scopes/${S}/changes`, {
      token: h1,
      body: { holders: ['h1', 'h2', 'h3', 'h4'], reason: 'h4 joins' },
    });
    expect(add.status).toBe(201);
    expect(add.body).toMatchObject({ state: 'pending', requester: 'h1', approvals: [{ holder: 'h1', valid: true }] });
    const raise = await api.call('POST', `/api/escrow/scopes/${S}/changes`, {
      token: h2,
      body: { approvalsRequired: 3, reason: 'stricter' },
    });
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${add.body.uid}/approve`, { token: h1 })).body.state).toBe('pending'); // one's own approval counts once
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${add.body.uid}/withdraw`, { token: h2 })).status).toBe(403);
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${add.body.uid}/approve`, { token: h4 })).status).toBe(404); // not a holder yet
    expect((await scopeRow(S)).holders).toEqual(['h1', 'h2', 'h3']);
    const applied = await api.call('POST', `/api/escrow/scopes/${S}/changes/${add.body.uid}/approve`, { token: h3 });
    expect(applied.body.state).toBe('applied');
    expect(await scopeRow(S)).toMatchObject({ holders: ['h1', 'h2', 'h3', 'h4'], approvalsRequired: 2 });
    // The other proposal was made against the old holders: superseded, and it cannot be approved.
    const stale = await api.call('POST', `/api/escrow/scopes/${S}/changes/${raise.body.uid}/approve`, { token: h3 });
    expect(stale.status).toBe(409);
    expect((await api.deps.store.repo<{ state: string }>(ScopeChangeModel).get(raise.body.uid))!.state).toBe('superseded');
    expect((await scopeRow(S)).approvalsRequired).toBe(2);
    const w = await api.call('POST', `/api/escrow/scopes/${S}/changes`, { token: h4, body: { holders: ['h4', 'h1'], reason: 'shrink' } });
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${w.body.uid}/withdraw`, { token: h4 })).body.state).toBe('withdrawn');
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${w.body.uid}/approve`, { token: h1 })).status).toBe(409);
    expect((await scopeRow(S)).holders).toEqual(['h1', 'h2', 'h3', 'h4']);
    const actions = (await audit()).filter((e) => e.scopeUid === S && e.action.startsWith('scope.change.')).map((e) => e.action);
    expect(actions).toEqual(
      expect.arrayContaining([
        'scope.change.request',
        'scope.change.approve',
        'scope.change.apply',
        'scope.change.supersede',
        'scope.change.withdraw',
      ]),
    );
    expect((await api.call('GET', `/api/escrow/scopes/${S}/changes`, { token: h2 })).body).toHaveLength(3);
  });

  it('assigning: holders only, one scope per mailbox; the owner reads the scope certificate, others get 404', async () => {
    expect((await api.call('POST', `/api/escrow/scopes/${S}/mailboxes`, { token: h1, body: { mailboxUid: p.aliceBox.uid } })).status).toBe(
      201,
    );
    const steal = await api.call('POST', `/api/escrow/scopes/${T}/mailboxes`, { token: p.admin, body: { mailboxUid: p.aliceBox.uid } });
    expect(steal.status).toBe(409);
    expect(
      (await api.deps.store.repo<{ escrowScopeUid: string }>(KeyVaultModel).findOne({ mailboxUid: p.aliceBox.uid }))!.escrowScopeUid,
    ).toBe(S);
    const info = await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/escrow`, { token: p.alice });
    expect(info.body).toMatchObject({ scope: { uid: S, certificatePem: cert }, needsEscrowWrap: true });
    expect(info.body.scope.holders).toBeUndefined();
    for (const token of [p.bob, p.admin, h1])
      expect((await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/escrow`, { token })).status).toBe(404);
    const wrap = { method: 'escrow', mailboxUid: p.aliceBox.uid, scopeUid: S, envelope: Buffer.from(random(300)).toString('base64') };
    expect(
      (
        await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/wraps`, {
          token: p.alice,
          body: { expectedMasterKeyGeneration: 1, wrap },
        })
      ).status,
    ).toBe(201);
    expect((await api.call('GET', `/api/escrow/scopes/${S}/mailboxes`, { token: h2 })).body).toEqual([
      { mailboxUid: p.aliceBox.uid, hasEscrowWrap: true },
    ]);
  });

  it('matters and access requests: holders of the scope only; the rest get 404 and nothing is stored', async () => {
    const body = {
      name: 'Case 1',
      scopeUid: S,
      custodians: [p.aliceBox.uid],
      from: new Date(Date.now() - day).toISOString(),
      to: new Date(Date.now() + day).toISOString(),
    };
    expect((await api.call('POST', '/api/escrow/matters', { token: p.admin, body })).status).toBe(404);
    expect(await api.deps.store.repo(MatterModel).count()).toBe(0);
    const m = await api.call('POST', '/api/escrow/matters', { token: h1, body });
    expect(m.status).toBe(201);
    matterUid = m.body.uid;
    expect(
      (
        await api.call('PUT', `/api/escrow/matters/${matterUid}`, {
          token: h1,
          body: { version: 1, custodians: [p.aliceBox.uid, p.bobBox.uid] },
        })
      ).status,
    ).toBe(400); // fixed at creation
    expect((await api.call('GET', '/api/escrow/matters', { token: p.admin })).body).toEqual([]);
    expect((await api.call('GET', `/api/escrow/matters/${matterUid}`, { token: p.admin })).status).toBe(404);
    expect((await api.call('POST', '/api/escrow/access-requests', { token: p.admin, body: { matterUid, reason: 'curious' } })).status).toBe(
      404,
    );
    expect(await api.deps.store.repo(AccessRequestModel).count()).toBe(0);
    const r = await api.call('POST', '/api/escrow/access-requests', { token: h1, body: { matterUid, reason: 'court order' } });
    expect(r.body).toMatchObject({ state: 'pending', scopeUid: S, requester: 'h1' });
    requestUid = r.body.uid;
    for (const [method, path] of [
      ['GET', `/api/escrow/access-requests/${requestUid}`],
      ['POST', `/api/escrow/access-requests/${requestUid}/approve`],
      ['POST', `/api/escrow/access-requests/${requestUid}/withdraw`],
      ['GET', `/api/escrow/access-requests/${requestUid}/material`],
      ['GET', `/api/escrow/matter-search?matterUid=${matterUid}`],
      ['POST', `/api/escrow/matters/${matterUid}/close`],
    ] as const) {
      expect((await api.call(method, path, { token: p.admin })).status, `${method} ${path}`).toBe(404);
    }
    expect((await api.call('GET', '/api/escrow/access-requests', { token: p.admin })).body).toEqual([]);
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/withdraw`, { token: h2 })).status).toBe(403); // a holder, not the requester
    expect((await api.deps.store.repo<{ state: string }>(AccessRequestModel).get(requestUid))!.state).toBe('pending');
    expect((await api.deps.store.repo<{ state: string }>(MatterModel).get(matterUid))!.state).toBe('open');
    expect(
      (await audit()).filter((e) => e.action === 'access.denied' && e.actor === 'root' && e.scopeUid === S).map((e) => e.details.attempted),
    ).toEqual(expect.arrayContaining(['request.approve', 'request.withdraw', 'material.read', 'matter.search', 'matter.close']));
  });

  it('material goes to holders only: a requester removed from the scope gets 404', async () => {
    // Even metadata needs M approvals: one holder alone does not search the custodians' mail.
    const alone = await api.call('GET', `/api/escrow/matter-search?matterUid=${matterUid}`, { token: h1 });
    expect(alone.status).toBe(403);
    expect(alone.body.code).toBe('api-102');
    expect((await audit()).at(-1)).toMatchObject({ action: 'matter.search.refused', actor: 'h1', scopeUid: S });
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h2 })).body.state).toBe('approved');
    expect((await api.call('GET', `/api/escrow/matter-search?matterUid=${matterUid}`, { token: h1 })).status).toBe(200);
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(200);
    const c = await api.call('POST', `/api/escrow/scopes/${S}/changes`, {
      token: h2,
      body: { holders: ['h2', 'h3', 'h4'], reason: 'h1 leaves' },
    });
    expect((await api.call('POST', `/api/escrow/scopes/${S}/changes/${c.body.uid}/approve`, { token: h3 })).body.state).toBe('applied');
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(404);
    expect((await api.call('GET', `/api/escrow/scopes/${S}`, { token: h1 })).status).toBe(404);
    // h1's own approval stopped counting with h1: one valid approval (h2) of two.
    const r = await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h2 });
    expect(r.status).toBe(403);
    expect(r.body.message).toMatch(/1 valid approvals of 2/);
  });

  it('the audit log is read by holders, each the entries of the scopes they hold', async () => {
    for (const path of ['/api/escrow/audit-log', '/api/escrow/audit-log/verify']) {
      const r = await api.call('GET', path, { token: nobody });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe('api-102');
    }
    const rootLog = (await api.call('GET', '/api/escrow/audit-log?limit=1000', { token: p.admin })).body as EscrowAuditEntry[];
    expect(rootLog.length).toBeGreaterThan(0);
    expect(rootLog.every((e) => e.scopeUid === T)).toBe(true);
    expect((await api.call('GET', `/api/escrow/audit-log?scopeUid=${S}`, { token: p.admin })).status).toBe(404);
    const h2Log = (await api.call('GET', `/api/escrow/audit-log?scopeUid=${S}&limit=1000`, { token: h2 })).body as (EscrowAuditEntry & {
      uid: string;
    })[];
    expect(h2Log.length).toBe((await audit()).filter((e) => e.scopeUid === S).length);
    expect((await api.call('GET', '/api/escrow/audit-log/verify', { token: p.admin })).body).toMatchObject({ ok: true });
    // The scope of an entry is hashed: moving an entry out of its holders' view breaks the chain.
    const victim = h2Log[1];
    const entries = api.deps.store.repo<EscrowAuditEntry>(EscrowAuditModel);
    await entries.update(victim.uid, { scopeUid: T });
    expect((await api.call('GET', '/api/escrow/audit-log/verify', { token: h2 })).body).toMatchObject({
      ok: false,
      brokenAt: { seq: victim.seq },
    });
    await entries.update(victim.uid, { scopeUid: S });
    expect((await api.call('GET', '/api/escrow/audit-log/verify', { token: h2 })).body).toMatchObject({ ok: true });
  });

  it('unassigning: holders only, not while a custodian of an open matter; the escrow wrap is removed and audited', async () => {
    const path = `/api/escrow/scopes/${S}/mailboxes/${p.aliceBox.uid}`;
    expect((await api.call('DELETE', path, { token: p.admin })).status).toBe(404);
    const busy = await api.call('DELETE', path, { token: h2 });
    expect(busy.status).toBe(409);
    expect(busy.body.message).toContain(matterUid);
    expect((await api.call('DELETE', `/api/escrow/scopes/${S}?version=${(await scopeRow(S)).version}`, { token: h2 })).status).toBe(409); // mailboxes assigned
    expect((await api.call('POST', `/api/escrow/matters/${matterUid}/close`, { token: h3 })).body.state).toBe('closed');
    expect((await api.call('DELETE', path, { token: h2 })).status).toBe(204);
    const v = (await api.deps.store
      .repo<{ escrowScopeUid: string | null; wraps: Array<{ method: string }> }>(KeyVaultModel)
      .findOne({ mailboxUid: p.aliceBox.uid }))!;
    expect(v.escrowScopeUid).toBeNull();
    expect(v.wraps.some((w) => w.method === 'escrow')).toBe(false);
    expect((await audit()).at(-1)).toMatchObject({
      action: 'scope.unassign',
      actor: 'h2',
      scopeUid: S,
      details: { mailboxUid: p.aliceBox.uid, escrowWrapRemoved: true },
    });
    expect((await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/escrow`, { token: p.alice })).body).toMatchObject({
      scope: null,
      hasEscrowWrap: false,
      needsEscrowWrap: false,
    });
    expect((await api.call('DELETE', path, { token: h2 })).status).toBe(404);
    // Free again: the other scope's holders may take it now.
    expect(
      (await api.call('POST', `/api/escrow/scopes/${T}/mailboxes`, { token: p.admin, body: { mailboxUid: p.aliceBox.uid } })).status,
    ).toBe(201);
    // A scope named by a matter stays, for the record.
    expect((await api.call('DELETE', `/api/escrow/scopes/${S}?version=${(await scopeRow(S)).version}`, { token: h2 })).status).toBe(409);
    expect(await scopeRow(S)).toBeTruthy();
  });
});
