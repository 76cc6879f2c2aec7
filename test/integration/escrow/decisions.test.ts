// Spec: Key escrow access — where each holder stands on an access request (GET …/decisions), and a
// holder declining (POST …/decline): their approval withdrawn, the request back to pending when it
// falls below M, the reason kept and audited; approving again lifts the decline; an aged approval
// shows as expired; a non-holder sees nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault } from '../../../lib/keys/client/index.js';
import { ApprovalModel } from '../../../lib/escrow/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { requirePrograms } from '../../helpers/peers.js';
import { keyTestValues, TEST_ARGON2 } from '../keys/helpers.js';
import { scopeKeyPair } from './scope-key.js';

const [sqlite] = await sqlBackends();

describe.runIf(requirePrograms('openssl'))('escrow access requests: decisions and declines', () => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let h1: string;
  let h2: string;
  let h3: string;
  let requestUid = '';
  const decisions = async (token = h1) => api.call('GET', `/api/escrow/access-requests/${requestUid}/decisions`, { token });

  beforeAll(async () => {
    api = await startTestApi(sqlite, await keyTestValues());
    p = await seedUsers(api);
    [h1, h2, h3] = await Promise.all(['h1', 'h2', 'h3'].map((uid) => api.token({ uid, roles: ['admin'], elevated: true })));
    const v = await createVault(p.aliceBox.uid, 'alice@example.test', 'alice-pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/enroll`, { token: p.alice, body: v.body })).status).toBe(
      201,
    );
    const scope = await api.call('POST', '/api/escrow/scopes', {
      token: h1,
      body: { name: 'Legal', certificatePem: scopeKeyPair().certPem, holders: ['h1', 'h2', 'h3'], approvalsRequired: 2 },
    });
    expect(
      (await api.call('POST', `/api/escrow/scopes/${scope.body.uid}/mailboxes`, { token: h1, body: { mailboxUid: p.aliceBox.uid } }))
        .status,
    ).toBe(201);
    const matter = await api.call('POST', '/api/escrow/matters', {
      token: h1,
      body: {
        name: 'Case 9',
        scopeUid: scope.body.uid,
        custodians: [p.aliceBox.uid],
        from: '2026-01-01T00:00:00Z',
        to: '2027-01-01T00:00:00Z',
      },
    });
    requestUid = (
      await api.call('POST', '/api/escrow/access-requests', { token: h1, body: { matterUid: matter.body.uid, reason: 'subpoena 7' } })
    ).body.uid;
  }, 60_000);
  afterAll(async () => api?.close());

  it("shows the requester's own approval counting, one of M", async () => {
    const d = await decisions();
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject({
      state: 'pending',
      holders: ['h1', 'h2', 'h3'],
      approvalsRequired: 2,
      approvalTtlHours: 72,
      valid: 1,
      declines: [],
    });
    expect(d.body.approvals).toEqual([expect.objectContaining({ holder: 'h1', counts: 'valid' })]);
    expect(Date.parse(d.body.approvals[0].expiresAt) - Date.parse(d.body.approvals[0].approvedAt)).toBe(72 * 3_600_000);
  });

  it('a decline withdraws the approval and the request falls back to pending; approving again lifts it', async () => {
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h2 })).body.state).toBe('approved');
    const declined = await api.call('POST', `/api/escrow/access-requests/${requestUid}/decline`, {
      token: h2,
      body: { reason: 'not covered by the order' },
    });
    expect(declined.body).toEqual({ uid: requestUid, state: 'pending' });
    const d = (await decisions(h3)).body;
    expect(d).toMatchObject({
      state: 'pending',
      valid: 1,
      declines: [expect.objectContaining({ holder: 'h2', reason: 'not covered by the order' })],
    });
    expect(d.approvals.map((a: { holder: string }) => a.holder)).toEqual(['h1']);
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/material`, { token: h1 })).status).toBe(403);
    const audit = (await api.call('GET', '/api/escrow/audit-log', { token: h1 })).body as Array<{
      action: string;
      details: { reason?: string };
    }>;
    expect(audit.find((e) => e.action === 'request.decline')?.details.reason).toBe('not covered by the order');
    // A decline is no veto: h3's approval makes M.
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h3 })).body.state).toBe('approved');
    expect((await api.call('POST', `/api/escrow/access-requests/${requestUid}/approve`, { token: h2 })).status).toBe(200);
    expect((await decisions()).body).toMatchObject({ valid: 3, declines: [] });
  });

  it('an approval older than the TTL shows as expired and no longer counts', async () => {
    const approvals = api.deps.store.repo<{ holder: string; approvedAt: Date; requestUid: string }>(ApprovalModel);
    const [mine] = await approvals.list({ filter: { requestUid, holder: 'h3' } });
    await approvals.update(mine.uid, { approvedAt: new Date(Date.now() - 73 * 3_600_000) });
    const d = (await decisions()).body;
    expect(d.valid).toBe(2);
    expect(d.approvals.find((a: { holder: string }) => a.holder === 'h3').counts).toBe('expired');
  });

  it('answers 404 to a non-holder and 400 to a bad body; needs a fresh elevation', async () => {
    for (const r of [
      await api.call('GET', `/api/escrow/access-requests/${requestUid}/decisions`, { token: p.admin }),
      await api.call('POST', `/api/escrow/access-requests/${requestUid}/decline`, { token: p.admin, body: {} }),
    ])
      expect(r.body).toMatchObject({ status: 404, code: 'api-107' });
    const bad = await api.call('POST', `/api/escrow/access-requests/${requestUid}/decline`, { token: h2, body: { reason: 7 } });
    expect(bad.body).toMatchObject({ status: 400, code: 'api-106' });
    const stale = await api.token({ uid: 'h2', roles: ['admin'] });
    expect((await api.call('GET', `/api/escrow/access-requests/${requestUid}/decisions`, { token: stale })).body.code).toBe('api-104');
  });
});
