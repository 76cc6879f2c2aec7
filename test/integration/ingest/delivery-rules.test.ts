// Per-mailbox delivery rules at delivery time (Spec: Inbound message, delivery rules 3 and 5): the
// user's filter rules (every action, size on the raw message) and Focused/Other (overrides first,
// then known correspondents, then heuristics). Real HTTP hand-off, real database, the scan job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, OutboundHandoffModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { CorrespondentModel } from '../../../lib/ingest/models.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { FolderModel, MailboxModel, MessageModel, type Folder, type Message } from '../../../lib/mail/index.js';
import { BlobModel } from '../../../lib/storage/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();

describe.each(backends)('delivery rules at delivery time ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  let projects: Folder & { uid: string };
  const store = () => f.api.deps.store;
  const folder = async (uid: string) => (await store().repo<Folder>(FolderModel).get(uid))!;
  const inbox = async (mailboxUid: string) => (await store().repo<Folder>(FolderModel).findOne({ mailboxUid, role: 'inbox' }))!;
  /** Hand off to alice, run the scan job, answer her entry. */
  const run = async (raw: string, from = 'sender@remote.example') => {
    const r = await f.deliver({ from, to: ['alice@example.test'], raw });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await drainQueue(w, 'rules-worker');
    return (
      await store()
        .repo<IngestEntry>(IngestEntryModel)
        .list({ filter: { transactionId: r.body.transactionId } })
    )[0];
  };
  const msg = async (uid: string | null) => (await store().repo<Message>(MessageModel).get(uid!))!;
  const rule = async (body: Record<string, unknown>) => {
    const r = await f.api.call('POST', '/api/mail/mail-filter-rules', {
      token: f.users.alice,
      body: { mailboxUid: f.users.aliceBox.uid, ...body },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { uid: string };
  };

  beforeAll(async () => {
    f = await ingestFixture(backend);
    // NODE_ENV=test with scanners that cannot be connected to: the development clean fallback.
    w = f.worker({
      values: {
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
      },
    });
    const p = await f.api.call('POST', '/api/mail/folders', {
      token: f.users.alice,
      body: { mailboxUid: f.users.aliceBox.uid, name: 'Projects' },
    });
    expect(p.status, JSON.stringify(p.body)).toBe(201);
    projects = p.body;
  }, 60_000);
  afterAll(async () => f?.close());

  describe('filter rule actions', () => {
    it("move: filed in the rule's folder (counts there, not in the Inbox; no Focused/Other outside the Inbox)", async () => {
      await rule({
        name: 'move',
        conditions: [{ field: 'subject', op: 'contains', value: 'MOVE-ME' }],
        actions: [{ type: 'move', folderUid: projects.uid }],
      });
      const [inb, proj] = [(await inbox(f.users.aliceBox.uid)).totalCount, await folder(projects.uid)];
      const e = await run(message({ subject: 'please MOVE-ME' }));
      expect(e.state).toBe('delivered');
      const m = await msg(e.messageUid);
      expect(m.folderUid).toBe(projects.uid);
      expect(m.focused).toBeNull();
      expect((await inbox(f.users.aliceBox.uid)).totalCount).toBe(inb);
      expect(await folder(projects.uid)).toMatchObject({ totalCount: proj.totalCount + 1, unreadCount: proj.unreadCount + 1 });
    });

    it('copy: a second record in the folder sharing the blob; counts, usage, blob references and message.delivered for both', async () => {
      await rule({
        name: 'copy',
        conditions: [{ field: 'subject', op: 'contains', value: 'COPY-ME' }],
        actions: [{ type: 'copy', folderUid: projects.uid }],
      });
      const boxes = store().repo<{ usedBytes: number }>(MailboxModel);
      const usedBefore = (await boxes.get(f.users.aliceBox.uid))!.usedBytes;
      const [inb, proj] = [await inbox(f.users.aliceBox.uid), await folder(projects.uid)];
      const delivered: Array<Record<string, unknown>> = [];
      const off = f.api.deps.events.onMail('message.delivered', (_k, p) => void delivered.push(p));
      const e = await run(message({ subject: 'please COPY-ME' }));
      off();
      expect(e.state).toBe('delivered');
      const original = await msg(e.messageUid);
      expect(original.folderUid).toBe(inb.uid);
      const copies = await store()
        .repo<Message>(MessageModel)
        .list({ filter: { folderUid: projects.uid, blobId: original.blobId } });
      expect(copies).toHaveLength(1);
      expect(copies[0].uid).not.toBe(original.uid);
      expect(copies[0]).toMatchObject({ mailboxUid: f.users.aliceBox.uid, subject: 'please COPY-ME', seen: false });
      expect((await inbox(f.users.aliceBox.uid)).totalCount).toBe(inb.totalCount + 1);
      expect(await folder(projects.uid)).toMatchObject({ totalCount: proj.totalCount + 1, unreadCount: proj.unreadCount + 1 });
      expect((await boxes.get(f.users.aliceBox.uid))!.usedBytes).toBe(usedBefore + 2 * original.size);
      expect((await store().repo<{ refs: number }>(BlobModel).get(original.blobId))!.refs).toBe(2);
      expect(
        delivered
          .filter((p) => p.entryUid === e.uid)
          .map((p) => p.messageUid)
          .sort(),
      ).toEqual([original.uid, copies[0].uid].sort());
      // a second run of the same entry (a crash after filing) files neither again
      await w.store.repo<IngestEntry>(IngestEntryModel).update(e.uid, { state: 'queued', nextAttemptAt: new Date() });
      await drainQueue(w, 'rules-worker');
      expect(await store().repo<Message>(MessageModel).count({ blobId: original.blobId })).toBe(2);
    });

    it('label and mark read: the filed message carries the label and is seen (unread count unchanged)', async () => {
      const label = await f.api.call('POST', '/api/mail/labels', {
        token: f.users.alice,
        body: { mailboxUid: f.users.aliceBox.uid, name: 'Invoices' },
      });
      expect(label.status).toBe(201);
      await rule({
        name: 'label+read',
        conditions: [{ field: 'subject', op: 'contains', value: 'LABEL-READ' }],
        actions: [{ type: 'label', labelUid: label.body.uid }, { type: 'markRead' }],
      });
      const before = await inbox(f.users.aliceBox.uid);
      const e = await run(message({ subject: 'your LABEL-READ invoice' }));
      const m = await msg(e.messageUid);
      expect(m.labels).toEqual([label.body.uid]);
      expect(m.seen).toBe(true);
      expect(await inbox(f.users.aliceBox.uid)).toMatchObject({ totalCount: before.totalCount + 1, unreadCount: before.unreadCount });
    });

    it('delete: nothing is filed and the entry says discarded', async () => {
      await rule({
        name: 'delete',
        conditions: [{ field: 'from', op: 'endsWith', value: '@spammy.example' }],
        actions: [{ type: 'delete' }],
      });
      const before = await inbox(f.users.aliceBox.uid);
      const e = await run(message({ from: 'x@spammy.example', subject: 'buy now' }), 'x@spammy.example');
      expect(e).toMatchObject({ state: 'discarded', messageUid: null });
      expect(e.verdict).toMatchObject({ reason: 'filter rule' });
      expect((await inbox(f.users.aliceBox.uid)).totalCount).toBe(before.totalCount);
      expect(await store().repo<Message>(MessageModel).count({ mailboxUid: f.users.aliceBox.uid, subject: 'buy now' })).toBe(0);
    });

    it('forward: handed to the outbound path once, and the message is still filed', async () => {
      await rule({
        name: 'fwd',
        conditions: [{ field: 'subject', op: 'contains', value: 'FWD-THIS' }],
        actions: [{ type: 'forward', to: ['boss@elsewhere.example'] }],
      });
      const e = await run(message({ subject: 'FWD-THIS please' }));
      expect(e.state).toBe('delivered');
      const fw = await store()
        .repo<{ kind: string; envelopeFrom: string; envelopeTo: string[] }>(OutboundHandoffModel)
        .list({ filter: { kind: 'forward' } });
      expect(fw.map((x) => [x.envelopeFrom, x.envelopeTo])).toEqual([['alice@example.test', ['boss@elsewhere.example']]]);
    });

    it('size conditions compare the raw message size, not the decoded text', async () => {
      await rule({
        name: 'big',
        conditions: [
          { field: 'size', op: 'over', value: 6000 },
          { field: 'subject', op: 'contains', value: 'SIZED' },
        ],
        actions: [{ type: 'move', folderUid: projects.uid }],
      });
      // A short text in a large message: long header fields the text part never shows.
      const padded = await run(message({ subject: 'SIZED big', body: 'short', headers: { 'X-Padding': 'p'.repeat(7000) } }));
      expect(padded.size).toBeGreaterThan(6000);
      expect((await msg(padded.messageUid)).folderUid).toBe(projects.uid);
      const small = await run(message({ subject: 'SIZED small', body: 'short' }));
      expect((await msg(small.messageUid)).folderUid).toBe((await inbox(f.users.aliceBox.uid)).uid);
    });
  });

  describe('Focused/Other', () => {
    const override = async (sender: string, classification: 'focused' | 'other') => {
      const r = await f.api.call('POST', '/api/mail/focused-inbox-overrides', {
        token: f.users.alice,
        body: { mailboxUid: f.users.aliceBox.uid, sender, classification },
      });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    };
    const focusOf = async (raw: string, from: string) => (await msg((await run(raw, from)).messageUid)).focused;
    const bulk = { 'List-Id': '<news.list.example>', Precedence: 'bulk' };

    it('heuristics without overrides or history: a person is Focused, automated and bulk mail is Other', async () => {
      expect(await focusOf(message({ from: 'Pat <pat@people.example>', subject: 'lunch?' }), 'pat@people.example')).toBe('focused');
      expect(
        await focusOf(message({ from: 'News <news@letters.example>', subject: 'weekly', headers: bulk }), 'news@letters.example'),
      ).toBe('other');
    });

    it('a known correspondent is Focused even when the mail looks automated', async () => {
      await run(message({ from: 'Kim <kim@partner.example>', subject: 'hello' }), 'kim@partner.example'); // recorded as a correspondent
      expect(await focusOf(message({ from: 'Kim <kim@partner.example>', subject: 'digest', headers: bulk }), 'kim@partner.example')).toBe(
        'focused',
      );
    });

    it('several messages from one sender in one scan round count once each in the correspondent record; automated mail does not count', async () => {
      for (const [i, headers] of [{}, {}, {}, bulk].entries()) {
        const r = await f.deliver({
          from: 'lee@crew.example',
          to: ['alice@example.test'],
          raw: message({ from: 'Lee <lee@crew.example>', subject: `round ${i}`, headers }),
        });
        expect(r.status).toBe(202);
      }
      const round = await drainQueue(w, 'rules-worker');
      expect(round.finished).toBe(4);
      const rec = await store()
        .repo<{ messages: number }>(CorrespondentModel)
        .findOne({ mailboxUid: f.users.aliceBox.uid, address: 'lee@crew.example' });
      expect(rec?.messages).toBe(3);
    });

    it('overrides come first: address over domain over correspondents and heuristics; parent domains count', async () => {
      await override('@partner.example', 'other');
      // kim is a known correspondent, but the domain override wins
      expect(await focusOf(message({ from: 'Kim <kim@partner.example>', subject: 'again' }), 'kim@partner.example')).toBe('other');
      await override('kim@partner.example', 'focused');
      // the address override beats the domain override
      expect(await focusOf(message({ from: 'Kim <kim@partner.example>', subject: 'and again' }), 'kim@partner.example')).toBe('focused');
      expect(await focusOf(message({ from: 'Lee <lee@partner.example>', subject: 'hi' }), 'lee@partner.example')).toBe('other');
      // automated mail from a domain marked Focused (through a parent domain) is Focused
      await override('@letters.example', 'focused');
      expect(
        await focusOf(
          message({ from: 'News <news@mail.letters.example>', subject: 'weekly 2', headers: bulk }),
          'news@mail.letters.example',
        ),
      ).toBe('focused');
      // an override of another mailbox does not apply to alice
      const bobOverride = await f.api.call('POST', '/api/mail/focused-inbox-overrides', {
        token: f.users.bob,
        body: { mailboxUid: f.users.bobBox.uid, sender: 'pat@people.example', classification: 'other' },
      });
      expect(bobOverride.status).toBe(201);
      expect(await focusOf(message({ from: 'Pat <pat@people.example>', subject: 'dinner?' }), 'pat@people.example')).toBe('focused');
    });
  });
});
