import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderModel, MessageModel, ThreadModel, type Folder, type Message, type Thread } from '../../../lib/mail/index.js';
import { threadUid } from '../../../lib/mail/threads.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';

const backends = await sqlBackends();

/** A message of conversation `thread` (its first message's id), `n` minutes into the day. */
const mail = (id: string, n: number, thread?: string) => `From: Carol <carol@example.net>
To: alice@example.test
Subject: ${thread ? 'Re: ' : ''}Plan ${id}
Date: Tue, 24 Nov 2026 10:${String(n).padStart(2, '0')}:00 +0000
Message-ID: <${id}@example.net>
${thread ? `In-Reply-To: <${thread}@example.net>\nReferences: <${thread}@example.net>\n` : ''}
About ${id}.
`;

interface Conversation {
  threadId: string;
  count: number;
  unreadCount: number;
  message: { uid: string; subject: string; version: number };
}

/** What the thread records of a folder must say, worked out from its messages. */
async function expected(api: TestApi, folderUid: string) {
  const msgs = await api.deps.store.repo<Message>(MessageModel).list({ filter: { folderUid }, limit: 10_000 });
  const out = new Map<string, { count: number; unread: number; latestDate: number }>();
  for (const m of msgs) {
    const t = out.get(m.threadId) ?? { count: 0, unread: 0, latestDate: 0 };
    out.set(m.threadId, { count: t.count + 1, unread: t.unread + (m.seen ? 0 : 1), latestDate: Math.max(t.latestDate, m.date.getTime()) });
  }
  return out;
}

async function stored(api: TestApi, folderUid: string) {
  const rows = await api.deps.store.repo<Thread>(ThreadModel).list({ filter: { folderUid }, limit: 10_000 });
  return new Map(rows.map((t) => [t.threadId, { count: t.count, unread: t.unread, latestDate: t.latestDate.getTime() }]));
}

describe.each(backends)('conversations (GET /api/mail/threads) on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let inbox: string;
  let archive: string;
  const list = async (folderUid: string, qs = '', token = p.alice) =>
    api.call('GET', `/api/mail/threads?folderUid=${folderUid}${qs}`, { token });

  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    const folders = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body as Array<{
      uid: string;
      role: string;
    }>;
    inbox = folders.find((f) => f.role === 'inbox')!.uid;
    archive = folders.find((f) => f.role === 'archive')!.uid;
    await deliverRaw(api, p.aliceBox.uid, mail('plan', 1));
    await deliverRaw(api, p.aliceBox.uid, mail('lone', 2));
    await deliverRaw(api, p.aliceBox.uid, mail('plan-r1', 3, 'plan'));
    // Filed together, as a scan round files its copies (one transaction for several copies).
    const later = { publish: (send: () => void) => send() };
    await Promise.all([
      deliverRaw(api, p.aliceBox.uid, mail('plan-r2', 5, 'plan'), { durableLater: later }),
      deliverRaw(api, p.aliceBox.uid, mail('other', 4), { durableLater: later }),
    ]);
  });
  afterAll(async () => api?.close());

  it('lists one row per conversation, newest first, with its counts and its newest message', async () => {
    const r = await list(inbox);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-total-count')).toBe('3');
    const rows = r.body as Conversation[];
    expect(rows.map((c) => [c.threadId, c.count, c.unreadCount, c.message.subject])).toEqual([
      ['<plan@example.net>', 3, 3, 'Re: Plan plan-r2'],
      ['<other@example.net>', 1, 1, 'Plan other'],
      ['<lone@example.net>', 1, 1, 'Plan lone'],
    ]);
    // The row's message is the message as the messages routes answer it (no internal fields).
    expect(rows[0].message).not.toHaveProperty('ingestKey');
    expect(Object.keys(rows[0].message)).toEqual(
      Object.keys((await api.call('GET', `/api/mail/messages/${rows[0].message.uid}`, { token: p.alice })).body),
    );
    const page = await list(inbox, '&limit=2&page=1');
    expect((page.body as Conversation[]).map((c) => c.threadId)).toEqual(['<lone@example.net>']);
    expect(page.headers.get('x-total-count')).toBe('3');
  });

  it('follows reading, moving, copying and deleting', async () => {
    const head = ((await list(inbox)).body as Conversation[])[0].message;
    const read = await api.call('PUT', `/api/mail/messages/${head.uid}/seen`, {
      token: p.alice,
      body: { value: true, version: head.version },
    });
    expect(read.status).toBe(200);
    expect(((await list(inbox)).body as Conversation[])[0]).toMatchObject({ count: 3, unreadCount: 2 });
    // The newest moves away: the conversation stays with the next newest as its row.
    expect((await api.call('POST', `/api/mail/messages/${head.uid}/move`, { token: p.alice, body: { folderUid: archive } })).status).toBe(
      200,
    );
    const rows = (await list(inbox)).body as Conversation[];
    // Its place is now its newest message's: after the 10:04 one.
    expect(rows.map((c) => c.threadId)).toEqual(['<other@example.net>', '<plan@example.net>', '<lone@example.net>']);
    const plan = rows[1];
    expect([plan.count, plan.unreadCount, plan.message.subject]).toEqual([2, 2, 'Re: Plan plan-r1']);
    expect(((await list(archive)).body as Conversation[]).map((c) => [c.threadId, c.count, c.unreadCount])).toEqual([
      ['<plan@example.net>', 1, 0],
    ]);
    expect(
      (await api.call('POST', `/api/mail/messages/${plan.message.uid}/copy`, { token: p.alice, body: { folderUid: archive } })).status,
    ).toBe(201);
    expect(((await list(archive)).body as Conversation[])[0]).toMatchObject({
      count: 2,
      unreadCount: 1,
      message: { subject: 'Re: Plan plan-r2' },
    });
    // The lone message deleted: its conversation is gone.
    const lone = ((await list(inbox)).body as Conversation[]).find((c) => c.threadId === '<lone@example.net>')!;
    expect(
      (await api.call('DELETE', `/api/mail/messages/${lone.message.uid}`, { token: p.alice, body: { version: lone.message.version } }))
        .status,
    ).toBe(204);
    const after = await list(inbox);
    expect(after.headers.get('x-total-count')).toBe('2');
    expect(await stored(api, inbox)).toEqual(await expected(api, inbox));
    expect(await stored(api, archive)).toEqual(await expected(api, archive));
  });

  it('builds the conversations of a folder filed before they were kept, on its first listing', async () => {
    const before = await stored(api, inbox);
    await api.deps.store.repo(ThreadModel).deleteMany({ folderUid: inbox });
    await api.deps.store.repo<Folder>(FolderModel).update(inbox, { threadsReady: false });
    expect((await api.call('GET', `/api/mail/folders/${inbox}`, { token: p.alice })).body).not.toHaveProperty('threadsReady');
    const r = await list(inbox);
    expect(r.status).toBe(200);
    expect(r.headers.get('x-total-count')).toBe(String(before.size));
    expect(await stored(api, inbox)).toEqual(before);
    expect((await api.deps.store.repo<Folder>(FolderModel).get(inbox))!.threadsReady).toBe(true);
    // Mail filed afterwards adds to what was built.
    await deliverRaw(api, p.aliceBox.uid, mail('plan-r3', 9, 'plan'));
    expect(((await list(inbox)).body as Conversation[])[0]).toMatchObject({ threadId: '<plan@example.net>', count: 3 });
    expect(await stored(api, inbox)).toEqual(await expected(api, inbox));
  });

  it('stays exact through a run of mixed changes (checked against the messages)', async () => {
    let seed = 7;
    const rand = (n: number) => (seed = (seed * 1103515245 + 12345) % 2 ** 31) % n;
    for (let i = 0; i < 40; i++) {
      const folder = rand(2) ? inbox : archive;
      const rows = (await api.call('GET', `/api/mail/messages?folderUid=${folder}&limit=1000`, { token: p.alice })).body as Array<{
        uid: string;
        version: number;
        seen: boolean;
      }>;
      const m = rows.length ? rows[rand(rows.length)] : null;
      const op = m ? rand(5) : 0;
      const other = folder === inbox ? archive : inbox;
      if (op === 0) await deliverRaw(api, p.aliceBox.uid, mail(`x${i}`, 10 + rand(40), rand(2) ? 'plan' : `x${rand(i + 1)}`));
      else {
        const [method, path, body] = (
          [
            ['PUT', `/api/mail/messages/${m!.uid}/seen`, { value: !m!.seen, version: m!.version }],
            ['POST', `/api/mail/messages/${m!.uid}/move`, { folderUid: other }],
            ['POST', `/api/mail/messages/${m!.uid}/copy`, { folderUid: other }],
            ['DELETE', `/api/mail/messages/${m!.uid}`, { version: m!.version }],
          ] as const
        )[op - 1];
        expect((await api.call(method, path, { token: p.alice, body })).status).toBeLessThan(300);
      }
    }
    for (const f of [inbox, archive]) {
      expect(await stored(api, f)).toEqual(await expected(api, f));
      // Each row is the newest message of its conversation in the folder.
      for (const c of (await list(f, '&limit=1000')).body as Array<Conversation & { message: { date: string } }>) {
        const t = await api.deps.store.repo<Thread>(ThreadModel).get(threadUid(f, c.threadId));
        expect(new Date(c.message.date).getTime()).toBe(t!.latestDate.getTime());
      }
    }
  });

  it('hides another mailbox’s folder (404) and refuses bad queries with the error body', async () => {
    for (const token of [p.bob, p.admin]) {
      const r = await list(inbox, '', token);
      expect(r.status).toBe(404);
      expect(r.body).toMatchObject({ code: 'api-107', status: 404 });
    }
    for (const qs of ['', `folderUid=${inbox}&limit=0`, `folderUid=${inbox}&page=-1`, `folderUid=${inbox}&sort=date`]) {
      const r = await api.call('GET', `/api/mail/threads?${qs}`, { token: p.alice });
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'api-106', status: 400 });
      expect(typeof r.body.message).toBe('string');
    }
    expect((await api.call('GET', `/api/mail/threads?folderUid=${inbox}`)).status).toBe(401);
  });
});
