// Audited impersonation over real HTTP on SQLite and PostgreSQL: without the owner's consent an
// administrator sees nothing (404, like any mail); with it, the administrator who asked reads — and
// only reads — the mailbox, every read audited; expiry and the owner's revocation end it; the
// normal mail routes never open to administrators.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { ImpersonationSessionModel, type ImpersonationSession } from '../../../lib/lifecycle/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';

const backends = await sqlBackends();

describe.each(backends)('impersonation on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let msg: string;
  let bobMsg: string;
  let inbox: string;
  let session: { uid: string; version: number };
  const view = (path: string, token = p.admin, method = 'GET', body?: unknown) =>
    api.call(method, `/api/admin/impersonation-sessions/${session.uid}/view${path}`, { token, body });
  const reads = async () =>
    (
      await api.deps.store
        .repo(AuditEntryModel)
        .list({ filter: { action: 'impersonation-sessions.read', resourceUid: session.uid }, limit: 100 })
    ).length;

  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    msg = (await deliverRaw(api, p.aliceBox.uid, 'From: x@example.net\nTo: alice@example.test\nSubject: private matter\n\nthe body text\n'))
      .uid;
    bobMsg = (await deliverRaw(api, p.bobBox.uid, 'From: x@example.net\nTo: bob@example.test\nSubject: for bob\n\nbob only\n')).uid;
    inbox = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}&role=inbox`, { token: p.alice })).body[0].uid;
    await api.call('POST', '/api/mail/calendar-share-links', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, name: 'public' } });
  }, 60_000);
  afterAll(async () => api?.close());

  it('an administrator asks with fresh elevation and a reason; others are refused', async () => {
    const body = { mailboxUid: p.aliceBox.uid, reason: 'ticket #4711: mail not arriving' };
    expect((await api.call('POST', '/api/admin/impersonation-sessions', { token: p.alice, body })).body.code).toBe('api-103');
    const stale = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    expect((await api.call('POST', '/api/admin/impersonation-sessions', { token: stale, body })).body).toMatchObject({
      status: 403,
      code: 'api-104',
    });
    expect(
      (await api.call('POST', '/api/admin/impersonation-sessions', { token: p.admin, body: { mailboxUid: p.aliceBox.uid } })).body.code,
    ).toBe('api-106');
    const r = await api.call('POST', '/api/admin/impersonation-sessions', { token: p.admin, body });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ state: 'pending', requestedBy: 'root', reason: body.reason, reads: 0 });
    session = r.body;
    const audit = await api.deps.store
      .repo(AuditEntryModel)
      .list({ filter: { action: 'impersonation-sessions.create', resourceUid: session.uid } });
    expect(audit).toHaveLength(1);
  });

  it("without the owner's consent nothing opens: 404 on mail, everywhere", async () => {
    expect((await view('/messages')).status).toBe(404);
    expect((await view(`/messages/${msg}`)).status).toBe(404);
    expect((await api.call('GET', `/api/mail/messages/${msg}`, { token: p.admin })).status).toBe(404);
    expect((await api.call('GET', `/api/mail/messages?mailboxUid=${p.aliceBox.uid}`, { token: p.admin })).status).toBe(404);
    expect(await reads()).toBe(0);
  });

  it('only the owner sees and decides; approval opens a time-limited session', async () => {
    expect((await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions`, { token: p.bob })).status).toBe(404);
    expect(
      (await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${session.uid}/approve`, { token: p.bob }))
        .status,
    ).toBe(404);
    expect(
      (await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${session.uid}/approve`, { token: p.admin }))
        .status,
    ).toBe(404);
    expect(
      (await api.call('POST', `/api/mail/mailboxes/${p.bobBox.uid}/impersonation-sessions/${session.uid}/approve`, { token: p.bob }))
        .status,
    ).toBe(404);
    const mine = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions`, { token: p.alice })).body;
    expect(mine).toEqual([
      expect.objectContaining({ uid: session.uid, state: 'pending', requestedBy: 'root', reason: 'ticket #4711: mail not arriving' }),
    ]);
    const ok = await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${session.uid}/approve`, {
      token: p.alice,
    });
    expect(ok.body).toMatchObject({ state: 'active', decidedBy: 'alice' });
    const minutes = (new Date(ok.body.expiresAt).getTime() - Date.now()) / 60_000;
    expect(minutes).toBeGreaterThan(59);
    expect(minutes).toBeLessThanOrEqual(60);
    expect(
      (await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${session.uid}/approve`, { token: p.alice }))
        .body.code,
    ).toBe('api-120');
  });

  it('with consent: read-only access for the administrator who asked, each read audited', async () => {
    const list = await view(`/messages?folderUid=${inbox}`);
    expect(list.status).toBe(200);
    expect(list.body.map((m: { uid: string }) => m.uid)).toEqual([msg]);
    expect((await view(`/messages/${msg}`)).body).toMatchObject({ uid: msg, subject: 'private matter' });
    expect((await view(`/messages/${msg}/body`)).body).toMatchObject({ encrypted: false, text: 'the body text\n' });
    expect((await view('/folders')).body.length).toBe(7);
    expect(await reads()).toBe(4);
    // Pinned to the one mailbox, whatever the query or id names.
    expect((await view(`/messages/${bobMsg}`)).status).toBe(404);
    expect(
      (await view(`/messages?mailboxUid=${p.bobBox.uid}`)).body.every((m: { mailboxUid: string }) => m.mailboxUid === p.aliceBox.uid),
    ).toBe(true);
    expect((await view('/calendar-share-links')).status).toBe(404);
    // Writes are refused, and nothing changed.
    for (const [method, path] of [
      ['PUT', `/messages/${msg}`],
      ['DELETE', `/messages/${msg}`],
      ['POST', '/messages'],
      ['PUT', `/messages/${msg}/seen`],
    ] as const) {
      expect((await view(path, p.admin, method, { seen: true, version: 1 })).body, `${method} ${path}`).toMatchObject({
        status: 403,
        code: 'api-102',
      });
    }
    expect((await api.call('GET', `/api/mail/messages/${msg}`, { token: p.alice })).body.seen).toBe(false);
    // The normal routes stay closed to administrators while the session is active.
    expect((await api.call('GET', `/api/mail/messages/${msg}`, { token: p.admin })).status).toBe(404);
    expect((await api.call('PUT', `/api/mail/messages/${msg}`, { token: p.admin, body: { seen: true, version: 1 } })).status).toBe(404);
    // Another administrator, or the same one with stale elevation, reads nothing through it.
    const other = await api.token({ uid: 'root2', roles: ['admin'], elevated: true });
    expect((await view('/messages', other)).status).toBe(404);
    const stale = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    expect((await view('/messages', stale)).body.code).toBe('api-104');
    const stored = await api.deps.store.repo<ImpersonationSession>(ImpersonationSessionModel).get(session.uid);
    expect(stored!.reads).toBe(await reads());
    const entries = await api.deps.store
      .repo(AuditEntryModel)
      .list({ filter: { action: 'impersonation-sessions.read', resourceUid: session.uid }, limit: 100 });
    expect(entries.every((e) => (e as unknown as { actor: string }).actor === 'root')).toBe(true);
  });

  it('expiry ends access; the owner can end a session at once', async () => {
    const repo = api.deps.store.repo<ImpersonationSession>(ImpersonationSessionModel);
    await repo.update(session.uid, { expiresAt: new Date(Date.now() - 1000) });
    expect((await view('/messages')).status).toBe(404);
    expect((await repo.get(session.uid))!.state).toBe('expired');

    const second = (
      await api.call('POST', '/api/admin/impersonation-sessions', {
        token: p.admin,
        body: { mailboxUid: p.aliceBox.uid, reason: 'follow-up' },
      })
    ).body;
    session = second;
    await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${second.uid}/approve`, { token: p.alice });
    expect((await view('/messages')).status).toBe(200);
    const ended = await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/impersonation-sessions/${second.uid}/decline`, {
      token: p.alice,
    });
    expect(ended.body.state).toBe('ended');
    expect((await view('/messages')).status).toBe(404);
    const revoke = await api.deps.store
      .repo(AuditEntryModel)
      .list({ filter: { action: 'impersonation-sessions.revoke', resourceUid: second.uid } });
    expect(revoke).toEqual([expect.objectContaining({ actor: 'alice' })]);
  });
});
