// PUT /api/mail/mailboxes/:id/owners: administration sets who owns a mailbox (trusted role, fresh
// elevation, audited); the new owner reads the mailbox and the removed one no longer does; an entry's
// other rights stay; at least one owner; 404 for no such mailbox; the owners themselves cannot use it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AclEntryModel } from '../../../lib/acl/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('mailbox owners set by administration ($name)', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let carol: string;
  const put = (owners: unknown, token = p.admin, uid = p.aliceBox.uid) =>
    api.call('PUT', `/api/mail/mailboxes/${uid}/owners`, { token, body: { owners } });
  const folders = (token: string) => api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token });

  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    carol = await api.token({ uid: 'carol', roles: [] });
  });
  afterAll(async () => api?.close());

  it('replaces the owners: the new one reads the mailbox, the old one no longer; audited with before and after', async () => {
    expect((await folders(carol)).status).toBe(404);
    const r = await put(['carol']);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ uid: p.aliceBox.uid, owners: ['carol'] });
    expect((await folders(carol)).body.length).toBeGreaterThan(0);
    expect((await folders(p.alice)).status).toBe(404);
    const shown = (await api.call('GET', `/api/mail/mailboxes?scope=admin`, { token: p.admin })).body.find(
      (m: { uid: string }) => m.uid === p.aliceBox.uid,
    );
    expect(shown.owners).toEqual(['carol']);
    const audit = (await api.call('GET', `/api/mail/audit-log?action=mailboxes.owners`, { token: p.admin })).body;
    expect(audit[0]).toMatchObject({
      actor: 'root',
      resourceUid: p.aliceBox.uid,
      before: { owners: ['alice'] },
      after: { owners: ['carol'] },
    });
    expect((await put(['alice', 'carol'])).body.owners.sort()).toEqual(['alice', 'carol']);
  });

  it("keeps an entry's other rights when it loses the owner right", async () => {
    const acl = api.deps.store.repo<{ subject: string; rights: string[]; resourceUid: string }>(AclEntryModel);
    const [entry] = await acl.list({ filter: { resourceUid: p.aliceBox.uid, subject: 'user:carol' } });
    await acl.update(entry.uid, { rights: ['owner', 'sendAs'] });
    expect((await put(['alice'])).body.owners).toEqual(['alice']);
    expect((await acl.get(entry.uid))!.rights).toEqual(['sendAs']);
  });

  it('refuses: no owner, a bad name, an unknown mailbox, a stale or no elevation, an owner', async () => {
    for (const owners of [[], ['user:x'], ['two words'], 'alice'])
      expect((await put(owners)).body).toMatchObject({ status: 400, code: 'api-106' });
    expect((await put(['alice'], p.admin, 'no-such-mailbox')).body).toMatchObject({ status: 404, code: 'api-107' });
    const stale = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    expect((await put(['carol'], stale)).body).toMatchObject({ status: 403, code: 'api-104' });
    expect((await put(['carol'], p.alice)).body).toMatchObject({ status: 403, code: 'api-103' });
    expect((await folders(p.alice)).status).toBe(200); // nothing changed
  });
});
