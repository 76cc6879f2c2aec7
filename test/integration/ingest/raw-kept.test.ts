// Accepted mail is never lost because another copy of the same bytes was deleted: a raw message is
// stored once per content, and its file must stay while an ingest entry waits to file it, a
// quarantined copy holds it or an outgoing copy waits to be handed over — not only while a message
// counts a reference (lib/storage/blob/release.ts, the models' blobHolders).
import { createHash } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ControlMessageModel,
  IngestEntryModel,
  OutboundHandoffModel,
  QuarantineModel,
  type IngestEntry,
  type WorkerDeps,
} from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { blobsOf, MailboxModel } from '../../../lib/mail/index.js';
import { OutboundJobModel } from '../../../lib/send/index.js';
import { blobInUse, releaseBlobs, sweepReleasedBlobs } from '../../../lib/storage/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const sha = (s: string) => createHash('sha256').update(s).digest('hex');

describe.each(backends)('raw messages stay while anything needs them ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  const entries = () => f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
  const blobs = () => blobsOf(f.api.deps);
  beforeAll(async () => {
    f = await ingestFixture(backend);
    w = f.worker({ scanners: 'clean' });
  });
  afterAll(async () => f?.close());

  const deliver = async (raw: string, to: string[]) => {
    const r = await f.deliver({ to, raw });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    return r.body.transactionId as string;
  };
  const entryOf = async (tx: string, mailboxUid: string) => (await entries().findOne({ transactionId: tx, mailboxUid }))!;
  const deleteMessage = async (token: string, uid: string) => {
    const cur = await f.api.call('GET', `/api/mail/messages/${uid}`, { token });
    const del = await f.api.call('DELETE', `/api/mail/messages/${uid}`, { token, body: { version: cur.body.version } });
    expect(del.status, JSON.stringify(del.body)).toBe(204);
  };
  const rawOf = async (token: string, uid: string) => {
    const res = await fetch(`${f.api.url}/api/mail/messages/${uid}/raw`, { headers: { authorization: `Bearer ${token}` } });
    expect(res.status).toBe(200);
    return res.text();
  };

  it('the same bytes handed off again for another mailbox survive the first copy being deleted', async () => {
    const raw = message({ subject: 'twice the same bytes' });
    const first = await deliver(raw, ['alice@example.test']);
    await drainQueue(w, 'raw-kept');
    const alices = await entryOf(first, f.users.aliceBox.uid);
    expect(alices.state).toBe('delivered');
    const second = await deliver(raw, ['bob@example.test']);
    expect((await entryOf(second, f.users.bobBox.uid)).rawRef).toBe(alices.rawRef);
    await deleteMessage(f.users.alice, alices.messageUid!);
    expect(blobs().locate(alices.rawRef), 'the queued entry for bob still needs the file').not.toBeNull();
    await drainQueue(w, 'raw-kept');
    const bobs = await entryOf(second, f.users.bobBox.uid);
    expect(bobs).toMatchObject({ state: 'delivered', attempts: 0, lastError: null });
    expect((await rawOf(f.users.bob, bobs.messageUid!)).replace(/\r\n/g, '\n')).toContain('twice the same bytes');
    // Once nothing needs it, its file goes.
    await deleteMessage(f.users.bob, bobs.messageUid!);
    expect(blobs().locate(alices.rawRef)).toBeNull();
  });

  it('one hand-off for two mailboxes: the copy still waiting to be filed keeps the file', async () => {
    const raw = message({ subject: 'for both of you' });
    const tx = await deliver(raw, ['alice@example.test', 'bob@example.test']);
    const bobsEntry = await entryOf(tx, f.users.bobBox.uid);
    // Bob's copy waits for a later retry (as after a temporary failure); Alice's is filed now.
    await entries().update(bobsEntry.uid, { nextAttemptAt: new Date(Date.now() + 3_600_000) });
    await drainQueue(w, 'raw-kept');
    const alices = await entryOf(tx, f.users.aliceBox.uid);
    expect(alices.state).toBe('delivered');
    expect((await entryOf(tx, f.users.bobBox.uid)).state).toBe('queued');
    await deleteMessage(f.users.alice, alices.messageUid!);
    await entries().update(bobsEntry.uid, { nextAttemptAt: new Date(Date.now() - 1000) });
    await drainQueue(w, 'raw-kept');
    const bobs = await entryOf(tx, f.users.bobBox.uid);
    expect(bobs).toMatchObject({ state: 'delivered', lastError: null });
    expect(await rawOf(f.users.bob, bobs.messageUid!)).toContain('for both of you');
  });

  it('a quarantined copy keeps the file until it is released, and its release files the right bytes', async () => {
    const boxes = f.api.deps.store.repo<{ quotaBytes: number; usedBytes: number }>(MailboxModel);
    const bob = (await boxes.get(f.users.bobBox.uid))!;
    await boxes.update(f.users.bobBox.uid, { quotaBytes: bob.usedBytes + 10 });
    const raw = message({ subject: 'held for bob' });
    const tx = await deliver(raw, ['alice@example.test', 'bob@example.test']);
    await drainQueue(w, 'raw-kept');
    await boxes.update(f.users.bobBox.uid, { quotaBytes: 0 });
    const alices = await entryOf(tx, f.users.aliceBox.uid);
    const bobs = await entryOf(tx, f.users.bobBox.uid);
    expect(bobs.state).toBe('quarantined');
    await deleteMessage(f.users.alice, alices.messageUid!);
    expect(blobs().locate(bobs.rawRef)).not.toBeNull();
    const rel = await f.api.call('POST', `/api/mail/quarantine/${bobs.uid}/release`, { token: f.users.admin });
    expect(rel.status, JSON.stringify(rel.body)).toBe(200);
    expect(await rawOf(f.users.bob, rel.body.messageUid)).toContain('held for bob');
  });

  it('deleting a quarantined copy nothing else needs frees its file', async () => {
    const boxes = f.api.deps.store.repo<{ quotaBytes: number; usedBytes: number }>(MailboxModel);
    const bob = (await boxes.get(f.users.bobBox.uid))!;
    await boxes.update(f.users.bobBox.uid, { quotaBytes: bob.usedBytes + 10 });
    const tx = await deliver(message({ subject: 'held, then deleted' }), ['bob@example.test']);
    await drainQueue(w, 'raw-kept');
    await boxes.update(f.users.bobBox.uid, { quotaBytes: 0 });
    const entry = await entryOf(tx, f.users.bobBox.uid);
    const item = (await f.api.deps.store.repo<{ version: number }>(QuarantineModel).get(entry.uid))!;
    expect(blobs().locate(entry.rawRef)).not.toBeNull();
    const del = await f.api.call('DELETE', `/api/mail/quarantine/${entry.uid}`, { token: f.users.admin, body: { version: item.version } });
    expect(del.status, JSON.stringify(del.body)).toBe(204);
    expect(blobs().locate(entry.rawRef)).toBeNull();
  });

  it('each record that waits for a raw message holds it only while it waits', async () => {
    const store = f.api.deps.store;
    const id = sha(`holder ${backend.name}`);
    const base = { envelopeFrom: 'a@remote.example', rawRef: id };
    expect(await blobInUse(store, id)).toBe(false);
    const handoff = await store
      .repo<{ state: string }>(OutboundHandoffModel)
      .create({ ...base, kind: 'ndr', envelopeTo: ['x@remote.example'] } as never);
    expect(await blobInUse(store, id), 'a queued outbound hand-off').toBe(true);
    await store.repo(OutboundHandoffModel).update(handoff.uid, { state: 'sent' });
    expect(await blobInUse(store, id), 'a sent outbound hand-off').toBe(false);
    const job = await store
      .repo(OutboundJobModel)
      .create({ ...base, kind: 'relay', size: 1, nextAttemptAt: new Date(), state: 'review' } as never);
    expect(await blobInUse(store, id), 'a send job waiting for review').toBe(true);
    await store.repo(OutboundJobModel).update(job.uid, { state: 'sent' });
    expect(await blobInUse(store, id), 'a sent send job').toBe(false);
    const control = await store
      .repo(ControlMessageModel)
      .create({ mailboxUid: f.users.aliceBox.uid, kind: 'read-receipt', sender: 'a@remote.example', data: {}, rawRef: id } as never);
    expect(await blobInUse(store, id), 'an unhandled control message').toBe(true);
    await store.repo(ControlMessageModel).update(control.uid, { handled: true });
    expect(await blobInUse(store, id)).toBe(false);
    const entry = await entries().create({
      ...base,
      transactionId: 'holder',
      mailboxUid: f.users.aliceBox.uid,
      recipient: 'alice@example.test',
      size: 1,
      nextAttemptAt: new Date(),
      state: 'failed',
    } as never);
    expect(await blobInUse(store, id), 'a failed entry an administrator may retry').toBe(true);
    await entries().update(entry.uid, { state: 'discarded' });
    expect(await blobInUse(store, id)).toBe(false);
  });

  it('a file released while the same bytes were being handed off comes back; one nothing needs is deleted after the grace period', async () => {
    const store = f.api.deps.store;
    const raw = message({ subject: 'released in a race' });
    const stored = await blobs().put(Buffer.from(raw));
    // The release decided "unused" just before a hand-off that found the file committed its entry.
    expect(await releaseBlobs(store, blobs(), [stored.blobId])).toBe(1);
    expect(blobs().locate(stored.blobId)).toBeNull();
    const tx = await deliver(raw, ['alice@example.test']);
    const entry = await entryOf(tx, f.users.aliceBox.uid);
    expect(entry.rawRef).toBe(stored.blobId);
    expect((await blobs().get(stored.blobId)).toString(), 'readable from the released copy meanwhile').toBe(raw);
    expect(await sweepReleasedBlobs(store, blobs(), { graceMs: 0 })).toMatchObject({ restored: 1 });
    expect(blobs().locate(stored.blobId)).not.toBeNull();
    await drainQueue(w, 'raw-kept');
    expect((await entryOf(tx, f.users.aliceBox.uid)).state).toBe('delivered');

    const lonely = await blobs().put(Buffer.from(message({ subject: 'nobody wants me' })));
    expect(await releaseBlobs(store, blobs(), [lonely.blobId])).toBe(1);
    expect(await sweepReleasedBlobs(store, blobs(), { graceMs: 60_000 })).toEqual({ deleted: 0, restored: 0 });
    expect(readdirSync(blobs().releasedDir).some((n) => n.startsWith(lonely.blobId))).toBe(true);
    expect(await sweepReleasedBlobs(store, blobs(), { graceMs: 60_000, now: Date.now() + 61_000 })).toEqual({ deleted: 1, restored: 0 });
    expect(existsSync(join(blobs().releasedDir))).toBe(true);
    expect(readdirSync(blobs().releasedDir)).toEqual([]);
    await expect(blobs().get(lonely.blobId)).rejects.toMatchObject({ code: 'api-107' });
  });
});
