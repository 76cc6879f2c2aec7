// The retention job on both SQL backends: messages past their folder class's age are deleted with
// the delete path's bookkeeping (folder counts, mailbox usage, blob references and files); young
// mail, classes without an age, drafts and mail on legal hold (an open escrow matter) are kept; one
// worker copy runs it per period (lease on the schedule record).
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntryModel, type AuditEntry } from '../../../lib/audit/index.js';
import { MatterModel } from '../../../lib/escrow/index.js';
import { JobScheduleModel, runIfDue, runRetention, type JobSchedule } from '../../../lib/jobs/index.js';
import { blobsOf, FolderModel, MailboxModel, MessageModel, type Folder, type Mailbox, type Message } from '../../../lib/mail/index.js';
import { BlobModel, type Row } from '../../../lib/storage/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';

const DAY = 86_400_000;
let n = 0;
const mail = (date: Date, to = 'alice@example.test', body = `body ${++n}`) =>
  `From: sender@remote.example\r\nTo: ${to}\r\nSubject: message ${n}\r\nMessage-ID: <r${n}.${Date.now()}@remote.example>\r\nDate: ${date.toUTCString()}\r\n\r\n${body}\r\n`;

for (const backend of await sqlBackends()) {
  describe(`retention job on ${backend.name}`, () => {
    let api: TestApi;
    let dataDir: string;
    let u: Awaited<ReturnType<typeof seedUsers>>;
    const folder = async (mailboxUid: string, role: string | null, name?: string) =>
      (await api.deps.store.repo<Folder>(FolderModel).findOne(name ? { mailboxUid, name } : { mailboxUid, role }))!;
    const msg = (uid: string) => api.deps.store.repo<Message>(MessageModel).get(uid);
    const now = Date.now();
    const future = new Date(now + 40 * DAY); // the job's clock: 40 days on, so what arrived today is 40 days old
    const m: Record<string, Row<Message>> = {};

    beforeAll(async () => {
      dataDir = mkdtempSync(join(tmpdir(), 'svcmail-retention-'));
      api = await startTestApi(backend, { data_dir: dataDir });
      u = await seedUsers(api);
      const projects = await api.call('POST', '/api/mail/folders', {
        token: u.alice,
        body: { mailboxUid: u.aliceBox.uid, name: 'Projects' },
      });
      expect(projects.status).toBe(201);
      const a = u.aliceBox.uid;
      const heldRaw = mail(new Date('2021-06-15T10:00:00Z'), 'alice@example.test, bob@example.test', 'shared by alice and bob');
      m.old = await deliverRaw(api, a, mail(new Date('2020-01-05T10:00:00Z')), { flags: { seen: true } });
      m.oldUnread = await deliverRaw(api, a, mail(new Date('2020-02-05T10:00:00Z')));
      // 15 days old by the job's clock (dated 25 days from today): younger than the inbox age of 30.
      m.young = await deliverRaw(api, a, mail(new Date(now + 25 * DAY)));
      m.held = await deliverRaw(api, a, heldRaw);
      m.closedMatter = await deliverRaw(api, a, mail(new Date('2019-03-01T10:00:00Z')));
      m.sent = await deliverRaw(api, a, mail(new Date('2020-01-05T10:00:00Z')), { folderRole: 'sent', flags: { seen: true } });
      m.junk = await deliverRaw(api, a, mail(new Date('2020-01-05T10:00:00Z')), { folderRole: 'junk' });
      m.draft = await deliverRaw(api, a, mail(new Date('2020-01-05T10:00:00Z')), {
        folderRole: 'drafts',
        flags: { draft: true, seen: true },
      });
      m.user = await deliverRaw(api, a, mail(new Date('2020-01-05T10:00:00Z')), { folderUid: projects.body.uid });
      m.bobShared = await deliverRaw(api, u.bobBox.uid, heldRaw);
      const matters = api.deps.store.repo<Record<string, unknown>>(MatterModel);
      await matters.create({
        name: 'open matter',
        description: '',
        scopeUid: 'scope-1',
        custodians: [a],
        from: new Date('2021-01-01T00:00:00Z'),
        to: new Date('2021-12-31T23:59:59Z'),
        state: 'open',
      });
      await matters.create({
        name: 'closed matter',
        description: '',
        scopeUid: 'scope-1',
        custodians: [a],
        from: new Date('2019-01-01T00:00:00Z'),
        to: new Date('2019-12-31T23:59:59Z'),
        state: 'closed',
      });
      const p = await api.call('PUT', '/api/system/retention-policy', {
        token: u.admin,
        body: { inboxDays: 30, junkDays: 7, userFoldersDays: 30, deletedDays: 1 },
      });
      expect(p.status, JSON.stringify(p.body)).toBe(200);
    }, 60_000);
    afterAll(async () => {
      await api?.close();
      rmSync(dataDir, { recursive: true, force: true });
    });

    it('deletes nothing that arrived within the age, even with an old Date header (imports, forged dates)', async () => {
      const r = await runRetention(api.deps);
      expect(r).toMatchObject({ deleted: 0, held: 0 });
      for (const rec of Object.values(m)) expect(await msg(rec.uid)).not.toBeNull();
    });

    it('one worker copy runs it per period; old mail goes, young, held, sent-without-age and drafts stay; counts, usage and blobs follow', async () => {
      const aliceBefore = (await api.deps.store.repo<Mailbox>(MailboxModel).get(u.aliceBox.uid))!;
      const inboxBefore = await folder(u.aliceBox.uid, 'inbox');
      expect(inboxBefore).toMatchObject({ totalCount: 5, unreadCount: 4 });
      const folderEvents: Array<Record<string, unknown>> = [];
      api.deps.events.subscribe(inboxBefore.uid, (_ch, ev) => {
        if (ev.type === 'folder') folderEvents.push(ev.data as Record<string, unknown>);
      });

      let runs = 0;
      const job = {
        name: 'retention',
        periodMs: 3600_000,
        leaseMs: 60_000,
        run: async () => {
          runs++;
          return runRetention(api.deps, { now: future, batchSize: 2 });
        },
      };
      const [r1, r2] = await Promise.all([runIfDue(api.deps, job, 'worker-1'), runIfDue(api.deps, job, 'worker-2')]);
      expect(runs).toBe(1);
      const result = (r1 ?? r2)!;
      expect([r1, r2].filter(Boolean)).toHaveLength(1);
      expect(await runIfDue(api.deps, job, 'worker-2')).toBeNull(); // not due again before the period ends
      expect(runs).toBe(1);
      const schedule = await api.deps.store.repo<JobSchedule>(JobScheduleModel).findOne({ job: 'retention' });
      expect(schedule).toMatchObject({ claimedBy: null, lastError: null, lastResult: { deleted: result.deleted } });
      expect(schedule!.nextRunAt.getTime()).toBeGreaterThan(Date.now() + 3500_000);

      const gone = ['old', 'oldUnread', 'closedMatter', 'junk', 'user', 'bobShared'];
      const kept = ['young', 'held', 'sent', 'draft'];
      for (const k of gone) expect(await msg(m[k].uid), k).toBeNull();
      for (const k of kept) expect(await msg(m[k].uid), k).not.toBeNull();
      expect(result).toMatchObject({ deleted: 6, held: 1, byClass: { inbox: 4, junk: 1, user: 1 } });
      expect(result.bytes).toBe(gone.reduce((s, k) => s + m[k].size, 0));

      // Folder counters as the delete path keeps them (seen and unseen removed correctly).
      expect(await folder(u.aliceBox.uid, 'inbox')).toMatchObject({ totalCount: 2, unreadCount: 2 });
      expect(await folder(u.aliceBox.uid, 'junk')).toMatchObject({ totalCount: 0, unreadCount: 0 });
      expect(await folder(u.aliceBox.uid, null, 'Projects')).toMatchObject({ totalCount: 0, unreadCount: 0 });
      expect(await folder(u.aliceBox.uid, 'sent')).toMatchObject({ totalCount: 1 });
      expect(await folder(u.aliceBox.uid, 'drafts')).toMatchObject({ totalCount: 1 });
      expect(await folder(u.bobBox.uid, 'inbox')).toMatchObject({ totalCount: 0, unreadCount: 0 });
      const aliceAfter = (await api.deps.store.repo<Mailbox>(MailboxModel).get(u.aliceBox.uid))!;
      const aliceGone = ['old', 'oldUnread', 'closedMatter', 'junk', 'user'].reduce((s, k) => s + m[k].size, 0);
      expect(aliceAfter.usedBytes).toBe(aliceBefore.usedBytes - aliceGone);
      expect((await api.deps.store.repo<Mailbox>(MailboxModel).get(u.bobBox.uid))!.usedBytes).toBe(0);
      expect(await api.deps.store.repo<Message>(MessageModel).count({ mailboxUid: u.aliceBox.uid })).toBe(4);

      // A blob only the deleted message referred to is gone (record and file); the shared one stays for alice's held copy.
      const blobs = blobsOf(api.deps);
      expect(await api.deps.store.repo(BlobModel).get(m.old.blobId)).toBeNull();
      expect(existsSync(blobs.path(m.old.blobId))).toBe(false);
      expect(m.bobShared.blobId).toBe(m.held.blobId);
      expect(await api.deps.store.repo<{ refs: number }>(BlobModel).get(m.held.blobId)).toMatchObject({ refs: 1 });
      expect(existsSync(blobs.path(m.held.blobId))).toBe(true);
      // The held message is still readable by its owner; search no longer finds deleted ones.
      expect((await api.call('GET', `/api/mail/messages/${m.held.uid}/raw`, { token: u.alice })).status).toBe(200);
      expect((await api.call('GET', `/api/mail/messages/${m.old.uid}`, { token: u.alice })).status).toBe(404);

      // Clients watching the Inbox got its new counts.
      expect(folderEvents.at(-1)).toMatchObject({ uid: inboxBefore.uid, totalCount: 2, unreadCount: 2 });
      const audit = await api.deps.store.repo<AuditEntry>(AuditEntryModel).list({ filter: { action: 'retention.run' } });
      expect(audit).toHaveLength(1);
      expect(audit[0]).toMatchObject({ actor: 'svcmail-worker', actorVia: 'job', details: { deleted: 6, held: 1 } });
    });

    it('runs again without deleting anything more; a matter closed later releases its hold', async () => {
      const again = await runRetention(api.deps, { now: future });
      expect(again).toMatchObject({ deleted: 0, held: 1 });
      await api.deps.store.repo(MatterModel).updateMany({ state: 'open' }, { state: 'closed' });
      const released = await runRetention(api.deps, { now: future });
      expect(released).toMatchObject({ deleted: 1, held: 0, byClass: { inbox: 1 } });
      expect(await msg(m.held.uid)).toBeNull();
      expect(await msg(m.young.uid)).not.toBeNull();
      expect(await folder(u.aliceBox.uid, 'inbox')).toMatchObject({ totalCount: 1, unreadCount: 1 });
      expect(existsSync(blobsOf(api.deps).path(m.held.blobId))).toBe(false);
    });

    it('does nothing while every class is kept (the default policy)', async () => {
      await api.call('PUT', '/api/system/retention-policy', {
        token: u.admin,
        body: { inboxDays: null, junkDays: null, userFoldersDays: null, deletedDays: null },
      });
      expect(await runRetention(api.deps, { now: new Date(now + 3650 * DAY) })).toMatchObject({ deleted: 0, held: 0 });
      expect(await msg(m.young.uid)).not.toBeNull();
    });
  });
}
