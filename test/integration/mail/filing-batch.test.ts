// A scan round's copies (FileRequest.durableLater) reaching filing in one turn of the event loop are
// filed in one transaction (lib/mail/filing.ts FilingBatch); each copy must come out exactly as if
// filed alone: counts, usage, blob references, search, events after the round's commit, idempotency
// per key, and one copy's trouble staying its own.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  FolderModel,
  MailboxModel,
  MessageModel,
  fileMessage,
  type FileRequest,
  type Folder,
  type Mailbox,
  type Message,
} from '../../../lib/mail/index.js';
import { BlobModel } from '../../../lib/storage/index.js';
import { groupStats } from '../../../lib/storage/sql/group-commit.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw, fileRequest, simpleMail } from '../../helpers/messages.js';

const backends = await sqlBackends();

/**
 * Files the requests in one turn of the event loop, as a round's deliveries reach filing (stored
 * and parsed first, so no request waits for its own file write while the others are collected).
 */
const fileTogether = async (api: TestApi, reqs: Array<Promise<FileRequest>>) => {
  const ready = await Promise.all(reqs);
  return Promise.allSettled(ready.map((r) => fileMessage(api.deps, r)));
};
const filedAll = async (api: TestApi, reqs: Array<Promise<FileRequest>>) =>
  (await fileTogether(api, reqs)).map((x) => {
    if (x.status === 'rejected') throw x.reason;
    return x.value;
  });

/** A round's stand-in: events handed to publish() wait until release(). */
function round() {
  const held: Array<() => void> = [];
  return { publish: (send: () => void) => void held.push(send), release: () => held.splice(0).forEach((s) => s()), held };
}

describe.each(backends)("filing a round's copies together on $name", (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const inboxOf = async (mailboxUid: string) => (await api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid, role: 'inbox' }))!;
  const usage = async (mailboxUid: string) => (await api.deps.store.repo<Mailbox>(MailboxModel).get(mailboxUid))!.usedBytes;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('files them in one transaction with exact counts, usage, blob references and search, and sends events only when the round says so', async () => {
    const boxes = [p.aliceBox.uid, p.bobBox.uid];
    const before = await Promise.all(boxes.map(async (b) => ({ inbox: await inboxOf(b), used: await usage(b) })));
    const r = round();
    const seen: Array<{ type: string }> = [];
    const offs = before.map((b) => api.deps.events.subscribe(b.inbox.uid, (_ch, e) => seen.push(e as never)));
    // One raw message filed to both mailboxes three times (one blob, six references) and five more to Alice, one of them read.
    const shared = simpleMail(500);
    const commits = { ...groupStats };
    const filed = await filedAll(api, [
      ...[0, 1, 2].flatMap((i) =>
        boxes.map((b) => fileRequest(api, b, shared, { idempotencyKey: `batch-shared-${i}-${b}`, durableLater: r })),
      ),
      ...[0, 1, 2, 3, 4].map((i) =>
        fileRequest(api, p.aliceBox.uid, simpleMail(510 + i), {
          idempotencyKey: `batch-alice-${i}`,
          durableLater: r,
          flags: i === 0 ? { seen: true } : {},
        }),
      ),
    ]);
    expect(new Set(filed.map((m) => m.uid)).size).toBe(11);
    // One transaction wrote them all (filed alone: eleven).
    if (backend.name === 'sqlite') expect(groupStats.members - commits.members).toBe(1);
    else {
      const c = new pg.Client({ connectionString: api.deps.config.get('datastores:sql:url') });
      await c.connect();
      const xmins = await c
        .query('SELECT DISTINCT xmin::text AS x FROM messages WHERE uid = ANY($1)', [filed.map((m) => m.uid)])
        .finally(() => c.end());
      expect(xmins.rows).toHaveLength(1);
    }
    expect(seen).toEqual([]); // nothing before the round's commit
    r.release();
    expect(seen.filter((e) => e.type === 'message')).toHaveLength(11);
    expect(seen.filter((e) => e.type === 'folder').length).toBeGreaterThanOrEqual(2);
    offs.forEach((off) => off());
    const [alice, bob] = await Promise.all(boxes.map(inboxOf));
    expect(alice).toMatchObject({ totalCount: before[0].inbox.totalCount + 8, unreadCount: before[0].inbox.unreadCount + 7 });
    expect(bob).toMatchObject({ totalCount: before[1].inbox.totalCount + 3, unreadCount: before[1].inbox.unreadCount + 3 });
    const sizeOf = (ms: Message[]) => ms.reduce((a, m) => a + m.size, 0);
    expect(await usage(p.aliceBox.uid)).toBe(before[0].used + sizeOf(filed.filter((m) => m.mailboxUid === p.aliceBox.uid)));
    expect(await usage(p.bobBox.uid)).toBe(before[1].used + sizeOf(filed.filter((m) => m.mailboxUid === p.bobBox.uid)));
    expect((await api.deps.store.repo<{ refs: number }>(BlobModel).get(filed[0].blobId))!.refs).toBe(6);
    const stored = await api.deps.store.repo<Message>(MessageModel).list({ filter: { uid: { $in: filed.map((m) => m.uid) } } });
    expect(stored.map((m) => m.folderUid).sort()).toEqual([...Array(8).fill(alice.uid), ...Array(3).fill(bob.uid)].sort());
    expect(stored.find((m) => m.ingestKey === 'batch-alice-0')).toMatchObject({ seen: true, subject: 'Hello 510' });
    // Search documents were written with the copies (no deferText given).
    expect(
      (await api.deps.store.repo<Message>(MessageModel).search('message 500', { filter: { mailboxUid: p.aliceBox.uid } })).length,
    ).toBe(3);
    expect(
      (await api.deps.store.repo<Message>(MessageModel).search('message 514', { filter: { mailboxUid: p.aliceBox.uid } })).map(
        (m) => m.ingestKey,
      ),
    ).toEqual(['batch-alice-4']);
  });

  it('files a copy filed before (a re-run) once, and the others of its batch too', async () => {
    const first = await deliverRaw(api, p.aliceBox.uid, simpleMail(600), { idempotencyKey: 'rerun-0' });
    const inbox = await inboxOf(p.aliceBox.uid);
    const used = await usage(p.aliceBox.uid);
    const r = round();
    const again = await filedAll(api, [
      fileRequest(api, p.aliceBox.uid, simpleMail(600), { idempotencyKey: 'rerun-0', durableLater: r }),
      fileRequest(api, p.aliceBox.uid, simpleMail(601), { idempotencyKey: 'rerun-1', durableLater: r }),
      fileRequest(api, p.aliceBox.uid, simpleMail(602), { idempotencyKey: 'rerun-2', durableLater: r }),
    ]);
    r.release();
    expect(again[0].uid).toBe(first.uid);
    expect(
      await api.deps.store
        .repo<Message>(MessageModel)
        .count({ mailboxUid: p.aliceBox.uid, ingestKey: { $in: ['rerun-0', 'rerun-1', 'rerun-2'] } }),
    ).toBe(3);
    expect(await inboxOf(p.aliceBox.uid)).toMatchObject({ totalCount: inbox.totalCount + 2, unreadCount: inbox.unreadCount + 2 });
    expect(await usage(p.aliceBox.uid)).toBe(used + again[1].size + again[2].size);
  });

  it('fails only the copy whose folder is not in its mailbox (api-107); the others are filed', async () => {
    const bobInbox = await inboxOf(p.bobBox.uid);
    const r = round();
    const results = await fileTogether(api, [
      fileRequest(api, p.aliceBox.uid, simpleMail(700), { idempotencyKey: 'wrong-0', durableLater: r, folderUid: bobInbox.uid }),
      fileRequest(api, p.aliceBox.uid, simpleMail(701), { idempotencyKey: 'wrong-1', durableLater: r }),
      fileRequest(api, p.bobBox.uid, simpleMail(702), { idempotencyKey: 'wrong-2', durableLater: r }),
    ]);
    r.release();
    expect(results.map((x) => x.status)).toEqual(['rejected', 'fulfilled', 'fulfilled']);
    expect((results[0] as PromiseRejectedResult).reason).toMatchObject({ code: 'api-107' });
    expect(await api.deps.store.repo<Message>(MessageModel).count({ ingestKey: 'wrong-0' })).toBe(0);
    expect(await inboxOf(p.bobBox.uid)).toMatchObject({ totalCount: bobInbox.totalCount + 1 });
  });

  it('keeps counts exact when several batches file into the same mailboxes at once', async () => {
    const boxes = [p.aliceBox.uid, p.bobBox.uid];
    const before = await Promise.all(boxes.map(async (b) => ({ inbox: await inboxOf(b), used: await usage(b) })));
    const rounds = Array.from({ length: 4 }, () => round());
    const filed = await filedAll(
      api,
      rounds.flatMap((r, k) =>
        Array.from({ length: 10 }, (_, i) =>
          fileRequest(api, boxes[(i + k) % 2], simpleMail(800 + k * 10 + i), { idempotencyKey: `many-${k}-${i}`, durableLater: r }),
        ),
      ),
    );
    rounds.forEach((r) => r.release());
    for (const [j, b] of boxes.entries()) {
      const mine = filed.filter((m) => m.mailboxUid === b);
      expect(mine).toHaveLength(20);
      expect(await inboxOf(b)).toMatchObject({
        totalCount: before[j].inbox.totalCount + 20,
        unreadCount: before[j].inbox.unreadCount + 20,
      });
      expect(await usage(b)).toBe(before[j].used + mine.reduce((a, m) => a + m.size, 0));
    }
  });
});
