// Reliability, fault injection: the blob store full. Writes under the test's blob directory fail with
// ENOSPC after half their bytes (as a full disk does), below every BlobStore entry point (put, the
// streaming writer): the MTA hand-off must answer a temporary failure (so the MTA retries; never
// 202), compose must keep the draft it had, nothing half-written may remain, and once space is back
// the same hand-off succeeds exactly once.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../lib/ingest/index.js';
import { deliverToService, SYSEXITS } from '../../lib/mta-client/index.js';
import { blobsOf, FolderModel, MessageModel, type Folder, type Message } from '../../lib/mail/index.js';
import { BlobModel } from '../../lib/storage/index.js';
import { sqlBackends } from '../helpers/databases.js';
import { problemsOf } from './faults.js';
import { INGEST_SECRET, startWorld, type World } from './world.js';

const disk = vi.hoisted(() => ({ full: false, root: '', hits: 0 }));

// The fault sits on the file handles node:fs/promises gives out, so it hits whichever BlobStore path
// writes (put, writer): half the bytes land, then ENOSPC — what a disk that fills up mid-write does.
vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>();
  const isFull = (path: unknown) => disk.full && disk.root !== '' && String(path).startsWith(disk.root);
  const enospc = (path: unknown) =>
    Object.assign(new Error(`ENOSPC: no space left on device, write '${String(path)}'`), {
      code: 'ENOSPC',
      errno: -28,
      syscall: 'write',
      path: String(path),
    });
  const open = async (...args: Parameters<typeof real.open>) => {
    const fh = await real.open(...args);
    const path = args[0];
    return new Proxy(fh, {
      get(target, prop) {
        const v = Reflect.get(target, prop, target) as unknown;
        if (typeof v !== 'function') return v;
        if (prop === 'write' || prop === 'writeFile') {
          return async (data: unknown, ...rest: unknown[]) => {
            if (!isFull(path)) return (v as (...a: unknown[]) => Promise<unknown>).apply(target, [data, ...rest]);
            const buf = typeof data === 'string' ? Buffer.from(data) : Buffer.from(data as Uint8Array);
            if (buf.length > 1) await target.write(buf.subarray(0, buf.length >> 1));
            disk.hits += 1;
            throw enospc(path);
          };
        }
        return (v as (...a: unknown[]) => unknown).bind(target);
      },
    });
  };
  return { ...real, open, default: { ...real, open } };
});

const backends = await sqlBackends();
const rejections: unknown[] = [];
const onRejection = (reason: unknown) => void rejections.push(reason);
beforeAll(() => void process.on('unhandledRejection', onRejection));
afterAll(() => void process.off('unhandledRejection', onRejection));

/** Every file under the blob directory (temporary ones included), relative. */
function filesUnder(root: string, dir = root): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? filesUnder(root, join(dir, e.name)) : [join(dir, e.name).slice(root.length + 1)],
  );
}

describe.each(backends)('the blob store full ($name)', (backend) => {
  let w: World;
  const counts = { faults: 0, leaks: 0 };
  beforeAll(async () => {
    w = await startWorld(backend);
    disk.root = blobsOf(w.api.deps).root;
  }, 120_000);
  afterAll(async () => {
    disk.full = false;
    await w?.close();
  });

  const entries = () => w.api.deps.store.repo<IngestEntry>(IngestEntryModel);
  const raw = (n: number) =>
    `From: Sender <sender@remote.example>\r\nTo: alice@example.test\r\nSubject: disk full ${n}\r\nMessage-ID: <full-${n}-${backend.name}@remote.example>\r\n\r\n${'The body of a message that arrives while the disk is full.\r\n'.repeat(200)}`;
  const deliver = async (body: string, tx: string) => {
    const res = await fetch(`${w.api.url}/internal/mta/deliver`, {
      method: 'POST',
      body,
      headers: {
        authorization: `Bearer ${INGEST_SECRET}`,
        'content-type': 'message/rfc822',
        'x-envelope-from': 'sender%40remote.example',
        'x-envelope-to': 'alice%40example.test',
        'x-transaction-id': tx,
      },
    });
    return { status: res.status, text: await res.text(), headers: res.headers };
  };

  it('the hand-off answers 503 api-113 (the MTA defers), leaves no queue row and no partial file, and succeeds exactly once after', async () => {
    const tx = `enospc-${backend.name}-1`;
    const before = filesUnder(disk.root);
    const blobRows = await w.api.deps.store.repo(BlobModel).count();
    disk.full = true;
    disk.hits = 0;
    const a = await deliver(raw(1), tx);
    // The same hand-off through the svcmail deliver client: exit 75, Postfix keeps the message queued.
    const viaClient = await deliverToService(
      { url: w.api.url, secret: INGEST_SECRET },
      { sender: 'sender@remote.example', recipients: ['alice@example.test'], queueId: tx, message: Readable.from([Buffer.from(raw(1))]) },
    );
    disk.full = false;
    counts.faults += 2;
    expect(disk.hits).toBeGreaterThan(0);
    expect(a.status).toBe(503);
    expect(JSON.parse(a.text)).toMatchObject({ code: 'api-113', status: 503 });
    const found = problemsOf(a, { expectError: true, extra: [disk.root] });
    counts.leaks += found.filter((p) => p.startsWith('leak')).length;
    expect(found).toEqual([]);
    expect(viaClient.exitCode).toBe(SYSEXITS.tempfail);
    expect(await entries().count({ transactionId: `mta:${tx}` })).toBe(0);
    expect(filesUnder(disk.root)).toEqual(before); // no temporary file, no half blob
    expect(await w.api.deps.store.repo(BlobModel).count()).toBe(blobRows);

    // Space is back: the MTA's retry is accepted once; a further retry is recognised as a duplicate.
    const ok = await deliver(raw(1), tx);
    expect(ok.status, ok.text).toBe(202);
    expect(JSON.parse(ok.text)).toMatchObject({ queued: 1, results: [{ recipient: 'alice@example.test', status: 'queued' }] });
    const again = await deliver(raw(1), tx);
    expect(again.status).toBe(202);
    expect(JSON.parse(again.text)).toMatchObject({ queued: 0, results: [{ status: 'duplicate' }] });
    const rows = await entries().list({ filter: { transactionId: `mta:${tx}` } });
    expect(rows).toHaveLength(1);
    // Every queue row names a blob that exists in full.
    for (const e of await entries().list({ limit: 1000 })) expect(existsSync(blobsOf(w.api.deps).path(e.rawRef)), e.rawRef).toBe(true);
    expect(filesUnder(disk.root).filter((f) => /tmp/.test(f))).toEqual([]);
  }, 60_000);

  it('a compose attachment upload answers 503 api-113 and keeps the draft as it was; after, the upload works once', async () => {
    const messages = w.api.deps.store.repo<Message>(MessageModel);
    const drafts = (await w.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: w.ids.mailbox, role: 'drafts' }))!;
    const draft = (await messages.get(w.ids.draft))!;
    const before = filesUnder(disk.root);
    const upload = () =>
      fetch(`${w.api.url}/api/mail/compose/${draft.uid}/attachments?filename=report.txt&version=${draft.version}`, {
        method: 'POST',
        body: 'attachment bytes '.repeat(500),
        headers: { authorization: `Bearer ${w.tokens.alice}`, 'content-type': 'text/plain' },
      });
    disk.full = true;
    disk.hits = 0;
    const res = await upload();
    const a = { status: res.status, text: await res.text(), headers: res.headers };
    disk.full = false;
    counts.faults += 1;
    expect(disk.hits).toBeGreaterThan(0);
    expect(a.status).toBe(503);
    expect(JSON.parse(a.text)).toMatchObject({ code: 'api-113' });
    const found = problemsOf(a, { expectError: true, extra: [disk.root] });
    counts.leaks += found.filter((p) => p.startsWith('leak')).length;
    expect(found).toEqual([]);
    expect(await messages.get(draft.uid)).toMatchObject({ version: draft.version, hasAttachments: false, folderUid: drafts.uid });
    expect(await messages.count({ folderUid: drafts.uid })).toBe(drafts.totalCount);
    expect((await w.api.deps.store.repo<Folder>(FolderModel).get(drafts.uid))!.totalCount).toBe(drafts.totalCount);
    expect(filesUnder(disk.root)).toEqual(before);

    const ok = await upload();
    const body = (await ok.json()) as Message & { uid: string };
    expect(ok.status).toBe(201);
    expect(body.attachments.map((x) => x.filename)).toEqual(['report.txt']);
    expect(await messages.get(draft.uid)).toBeNull();
    expect(await messages.count({ folderUid: drafts.uid })).toBe(drafts.totalCount);
    w.ids.draft = body.uid;
  }, 60_000);

  it('nothing ended in an unhandled rejection', () => {
    expect(rejections.map(String)).toEqual([]);
    // eslint-disable-next-line no-console -- the figures of the run, for the report
    console.log(`reliability: blob store full (${backend.name}): faults tried ${counts.faults}, routes checked 2, leaks ${counts.leaks}`);
  });
});
