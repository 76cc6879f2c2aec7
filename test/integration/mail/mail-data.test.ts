import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MailboxModel, MessageModel } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw, simpleMail } from '../../helpers/messages.js';

const backends = await sqlBackends();

describe.each(backends)('mail data on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let folders: Record<string, { uid: string; version: number }>;
  const folder = async (uid: string) => (await api.call('GET', `/api/mail/folders/${uid}`, { token: p.alice })).body;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    const list = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body as Array<{
      role: string;
      uid: string;
      version: number;
    }>;
    folders = Object.fromEntries(list.map((f) => [f.role, f]));
  });
  afterAll(async () => api?.close());

  it('Deleted Items: trash moves a message there with counts and events, a second trash removes it for good', async () => {
    const m = await deliverRaw(api, p.aliceBox.uid, simpleMail(1));
    const seen: Array<{ type: string; data: Record<string, unknown> }> = [];
    const off = api.deps.events.subscribe(folders.trash.uid, (_ch, e) => seen.push(e as never));
    const inboxBefore = await folder(folders.inbox.uid);
    const moved = await api.call('POST', `/api/mail/messages/${m.uid}/trash`, { token: p.alice });
    expect(moved.status).toBe(200);
    expect(moved.body.folderUid).toBe(folders.trash.uid);
    expect(await folder(folders.trash.uid)).toMatchObject({ totalCount: 1, unreadCount: 1 });
    expect(await folder(folders.inbox.uid)).toMatchObject({
      totalCount: inboxBefore.totalCount - 1,
      unreadCount: inboxBefore.unreadCount - 1,
    });
    expect(seen.find((e) => e.type === 'folder')?.data).toEqual(
      expect.objectContaining({ uid: folders.trash.uid, mailboxUid: p.aliceBox.uid, unreadCount: 1, totalCount: 1 }),
    );
    expect(seen.find((e) => e.type === 'message')?.data).toMatchObject({ uid: m.uid, folderUid: folders.trash.uid });
    const usage = (await api.deps.store.repo<{ usedBytes: number }>(MailboxModel).get(p.aliceBox.uid))!.usedBytes;
    expect((await api.call('POST', `/api/mail/messages/${m.uid}/trash`, { token: p.alice })).status).toBe(204);
    off();
    expect(await api.deps.store.repo(MessageModel).get(m.uid)).toBeNull();
    expect(await folder(folders.trash.uid)).toMatchObject({ totalCount: 0, unreadCount: 0 });
    expect((await api.deps.store.repo<{ usedBytes: number }>(MailboxModel).get(p.aliceBox.uid))!.usedBytes).toBe(usage - m.size);
    const other = await deliverRaw(api, p.aliceBox.uid, simpleMail(2));
    for (const token of [p.bob, p.admin])
      expect((await api.call('POST', `/api/mail/messages/${other.uid}/trash`, { token })).status).toBe(404);
    expect((await api.deps.store.repo<{ folderUid: string }>(MessageModel).get(other.uid))!.folderUid).toBe(folders.inbox.uid);
  });

  it('keeps quota usage exact under 60 concurrent filings, deletes and copies', async () => {
    const repo = api.deps.store.repo<{ usedBytes: number }>(MailboxModel);
    const before = (await repo.get(p.aliceBox.uid))!.usedBytes;
    const filed = await Promise.all(
      Array.from({ length: 40 }, (_, i) => deliverRaw(api, p.aliceBox.uid, simpleMail(100 + i, `X-Pad: ${'x'.repeat(i * 13)}`))),
    );
    const doomed = filed.slice(0, 10);
    const ops = [
      ...doomed.map((m) => api.call('DELETE', `/api/mail/messages/${m.uid}`, { token: p.alice, body: { version: m.version } })),
      ...filed
        .slice(10, 20)
        .map((m) => api.call('POST', `/api/mail/messages/${m.uid}/copy`, { token: p.alice, body: { folderUid: folders.archive.uid } })),
    ];
    const results = await Promise.all(ops);
    expect(results.map((r) => r.status).sort()).toEqual([...Array(10).fill(201), ...Array(10).fill(204)].sort());
    const rows = await api.deps.store
      .repo<{ size: number; mailboxUid: string }>(MessageModel)
      .list({ filter: { mailboxUid: p.aliceBox.uid }, limit: 10_000 });
    const after = (await repo.get(p.aliceBox.uid))!.usedBytes;
    expect(after).toBe(rows.reduce((a, r) => a + r.size, 0));
    const sz = (ms: Array<{ size: number }>) => ms.reduce((a, m) => a + m.size, 0);
    expect(after).toBe(before + sz(filed) - sz(doomed) + sz(filed.slice(10, 20)));
  });

  it('user folders nest, rename and delete; system folders do not; names are unique among siblings', async () => {
    const parent = (await api.call('POST', '/api/mail/folders', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, name: 'Projects' } }))
      .body;
    const child = await api.call('POST', '/api/mail/folders', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'Apollo', parentUid: parent.uid },
    });
    expect(child.status).toBe(201);
    expect(
      (
        await api.call('POST', '/api/mail/folders', {
          token: p.alice,
          body: { mailboxUid: p.aliceBox.uid, name: 'apollo', parentUid: parent.uid },
        })
      ).status,
    ).toBe(409);
    const renamed = await api.call('PUT', `/api/mail/folders/${child.body.uid}`, {
      token: p.alice,
      body: { name: 'Artemis', version: child.body.version },
    });
    expect(renamed.body).toMatchObject({ name: 'Artemis', parentUid: parent.uid });
    expect(
      (
        await api.call('PUT', `/api/mail/folders/${parent.uid}`, {
          token: p.alice,
          body: { parentUid: child.body.uid, version: parent.version },
        })
      ).status,
    ).toBe(400);
    expect(
      (
        await api.call('PUT', `/api/mail/folders/${folders.inbox.uid}`, {
          token: p.alice,
          body: { name: 'Mine', version: (await folder(folders.inbox.uid)).version },
        })
      ).status,
    ).toBe(409);
    expect(
      (await api.call('DELETE', `/api/mail/folders/${folders.sent.uid}`, { token: p.alice, body: { version: folders.sent.version } }))
        .status,
    ).toBe(409);
    expect(
      (await api.call('DELETE', `/api/mail/folders/${parent.uid}`, { token: p.alice, body: { version: parent.version } })).status,
    ).toBe(409);
    expect(
      (await api.call('DELETE', `/api/mail/folders/${child.body.uid}`, { token: p.alice, body: { version: renamed.body.version } })).status,
    ).toBe(204);
    expect(
      (await api.call('DELETE', `/api/mail/folders/${parent.uid}`, { token: p.alice, body: { version: parent.version } })).status,
    ).toBe(204);
    expect((await folder(folders.sent.uid)).name).toBe('Sent Items');
  });

  it('refuses a filter rule that names a missing folder or label, or one of another mailbox, with a clear error', async () => {
    const bobFolder = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.bobBox.uid}`, { token: p.bob })).body[0];
    const bad = [
      [{ type: 'move', folderUid: 'no-such-folder' }, /no folder no-such-folder/],
      [{ type: 'copy', folderUid: bobFolder.uid }, /no folder/],
      [{ type: 'label', labelUid: 'no-such-label' }, /no label no-such-label/],
    ] as const;
    for (const [action, message] of bad) {
      const r = await api.call('POST', '/api/mail/mail-filter-rules', {
        token: p.alice,
        body: { mailboxUid: p.aliceBox.uid, conditions: [], actions: [action] },
      });
      expect(r.status).toBe(400);
      expect(r.body.message).toMatch(message);
    }
    const ok = await api.call('POST', '/api/mail/mail-filter-rules', {
      token: p.alice,
      body: {
        mailboxUid: p.aliceBox.uid,
        conditions: [{ field: 'size', op: 'over', value: 10 }],
        actions: [{ type: 'move', folderUid: folders.archive.uid }],
      },
    });
    expect(ok.status).toBe(201);
    const stored = (await api.call('GET', `/api/mail/mail-filter-rules?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    expect(stored).toHaveLength(1);
    expect(stored[0].actions).toEqual([{ type: 'move', folderUid: folders.archive.uid }]);
  });
});
