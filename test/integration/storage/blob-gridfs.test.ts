// Blobs in GridFS (mail:blobs:backend: gridfs, with datastore: document): the promises of the file
// store — content addressed, whole or absent, streamed, released and swept with a grace period, taken
// back by a writer that needs it again — on the replica set SVCMAIL_TEST_MONGO_URL names. None can be
// installed on these machines (../shared/TESTING.md), so the driver's GridFS code also runs on the
// in-memory stand-in; in CI with the variable set and the server unreachable it fails.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { addBlobRefs, BlobModel, openBlobStore, releaseBlobs, sweepReleasedBlobs, type BlobStore } from '../../../lib/storage/index.js';
import type { DocumentStore } from '../../../lib/storage/document/adapter.js';
import { documentBackends, openStoreOf, type TestDatabase } from '../../helpers/databases.js';
import { memoryDocumentBackend } from '../../helpers/mongo-memory.js';

// The replica set when one is named, and always the in-memory stand-in (test/helpers/mongo-memory.ts), on which the driver's own GridFS code runs.
const backends = [...(await documentBackends()), memoryDocumentBackend()];
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

describe.each(backends)('blobs in GridFS on $name', (mongo) => {
  let db: TestDatabase;
  let store: DocumentStore;
  let blobs: BlobStore;
  let dir: string;
  const files = (id: string) => store.mongoDatabase().collection('blobs.files').countDocuments({ filename: id });
  const configFor = (url: string) =>
    loadConfig({
      env: { NODE_ENV: 'test' },
      values: { data_dir: dir, datastore: 'document', 'datastores:document:url': url, 'mail:blobs:backend': 'gridfs' },
    });
  beforeAll(async () => {
    db = await mongo.open();
    dir = mkdtempSync(join(tmpdir(), 'svcmail-gridfs-'));
    store = (await openStoreOf(mongo, db.url, [BlobModel])) as DocumentStore;
    blobs = openBlobStore(configFor(db.url), store);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores content once under its sha256 and reads and streams it back; an empty blob too', async () => {
    const data = randomBytes(600_000);
    const b = await blobs.put(data);
    expect(b).toEqual({ blobId: sha(data), sha256: sha(data), size: data.length });
    expect(await files(b.blobId)).toBe(1);
    expect(sha(await blobs.get(b.blobId))).toBe(b.sha256);
    const streamed: Buffer[] = [];
    for await (const c of blobs.stream(b.blobId)) streamed.push(c as Buffer);
    expect(sha(Buffer.concat(streamed))).toBe(b.sha256);
    await blobs.put(data);
    expect(await files(b.blobId)).toBe(1);
    const empty = await blobs.put(Buffer.alloc(0));
    expect((await blobs.get(empty.blobId)).length).toBe(0);
  });

  it('a streamed upload lands in a local temporary file and is copied in on commit', async () => {
    const parts = Array.from({ length: 20 }, () => randomBytes(64 * 1024));
    const w = await blobs.writer();
    for (const p of parts) await w.write(p);
    const staged = await w.finish();
    expect(existsSync(w.tmpPath)).toBe(true);
    expect(await files(staged.sha256)).toBe(0);
    await staged.commit();
    expect(existsSync(w.tmpPath)).toBe(false);
    expect(sha(await blobs.get(staged.blobId))).toBe(sha(Buffer.concat(parts)));
    expect(readdirSync(blobs.tmpDir)).toEqual([]);
  });

  it('an unknown blob is api-107, read or streamed', async () => {
    await expect(blobs.get('f'.repeat(64))).rejects.toMatchObject({ code: 'api-107' });
    await expect(text(blobs.stream('f'.repeat(64)))).rejects.toMatchObject({ code: 'api-107' });
    await expect(blobs.get('../etc/passwd')).rejects.toMatchObject({ code: 'api-107' });
  });

  it('two writers of the same bytes at once: both succeed and the blob reads whole', async () => {
    const data = randomBytes(300_000);
    const other = openBlobStore(configFor(db.url), store);
    await Promise.all([blobs.put(data), other.put(data), blobs.putStream(Readable.from([data]))]);
    expect(await files(sha(data))).toBeGreaterThanOrEqual(1);
    expect(sha(await other.get(sha(data)))).toBe(sha(data));
  });

  it('a released blob stays readable, is taken back by a writer that needs it, and is swept after the grace period', async () => {
    const data = randomBytes(5000);
    const id = sha(data);
    await blobs.put(data);
    expect(await releaseBlobs(store, blobs, [id])).toBe(1);
    expect((await blobs.released()).map((r) => r.id)).toContain(id);
    expect(sha(await blobs.get(id))).toBe(id);
    await blobs.put(data);
    expect((await blobs.released()).map((r) => r.id)).not.toContain(id);
    await releaseBlobs(store, blobs, [id]);
    await addBlobRefs(store, [{ blobId: id, sha256: id, size: data.length }]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 0, restored: 1 });
    await store.repo(BlobModel).delete(id);
    await releaseBlobs(store, blobs, [id]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 60_000 })).toEqual({ deleted: 0, restored: 0 });
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 1, restored: 0 });
    expect(await files(id)).toBe(0);
    await expect(blobs.get(id)).rejects.toMatchObject({ code: 'api-107' });
  });
});
