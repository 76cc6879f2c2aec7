// Blobs in the database (mail:blobs:backend: database): copies of svcmail on two hosts share raw
// messages through PostgreSQL with no shared file system. The store keeps every promise of the file
// store — content addressed, written all or none, streamed, released and swept with a grace period,
// taken back by a writer that needs it again — and the binary column under it (`bytesField`) round
// trips on both SQL engines. Two copies with data directories of their own: a message handed off
// through one is filed by the other's worker and read through both, and neither writes a blob file.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { secondCopy, type SecondCopy } from './_copies.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../../lib/config/index.js';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { blobsOf } from '../../../lib/mail/index.js';
import {
  addBlobRefs,
  BlobChunkModel,
  BlobModel,
  bytesField,
  DatabaseBlobStore,
  defineModel,
  openSqlStore,
  openStore,
  releaseBlobs,
  sweepReleasedBlobs,
  type Store,
} from '../../../lib/storage/index.js';
import { CHUNK } from '../../../lib/storage/blob/database.js';
import type { TestApi } from '../../helpers/api.js';
import { freshPostgres, postgresAvailable, sqlBackends, type TestDatabase } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';

const withPostgres = await postgresAvailable();
const backends = await sqlBackends();
const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

const Sample = defineModel({ name: 'bytesSample', table: 'bytes_samples', fields: { label: z.string(), data: bytesField } });

describe.each(backends)('a binary field ($name)', (backend) => {
  it('round trips every byte value, empty and large, through create, get and list', async () => {
    const db = await backend.open();
    const store = await openSqlStore({ url: db.url, models: [Sample], synchronize: true });
    try {
      const repo = store.repo<{ label: string; data: Buffer }>(Sample);
      const all = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
      const big = randomBytes(700_000);
      await repo.create({ uid: 'a', label: 'all', data: all });
      await repo.createMany([
        { uid: 'b', label: 'empty', data: Buffer.alloc(0) },
        { uid: 'c', label: 'big', data: big },
      ]);
      expect(Buffer.compare((await repo.get('a'))!.data, all)).toBe(0);
      const listed = await repo.list({ sort: [{ field: 'uid', dir: 'asc' }] });
      expect(listed.map((r) => [r.label, Buffer.isBuffer(r.data), r.data.length])).toEqual([
        ['all', true, 256],
        ['empty', true, 0],
        ['big', true, big.length],
      ]);
      expect(sha(listed[2].data)).toBe(sha(big));
      // Binary content is neither a filter nor a sort key.
      await expect(repo.list({ filter: { data: 'x' } })).rejects.toThrow(/cannot filter or sort on data/);
    } finally {
      await store.close();
      await db.drop();
    }
  }, 60_000);
});

describe('the database blob backend needs PostgreSQL or MongoDB, GridFS MongoDB', () => {
  it('start-up on SQLite refuses it with one line naming the settings', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-blobdb-'));
    try {
      const config = loadConfig({ env: { NODE_ENV: 'test' }, values: { data_dir: dir, 'mail:blobs:backend': 'database' } });
      await expect(openStore(config, [BlobModel, BlobChunkModel])).rejects.toThrow(
        'mail:blobs:backend "database" needs PostgreSQL (datastores:sql:url) or MongoDB (datastore: document); on SQLite keep the default "files"',
      );
      const gridfs = loadConfig({ env: { NODE_ENV: 'test' }, values: { data_dir: dir, 'mail:blobs:backend': 'gridfs' } });
      await expect(openStore(gridfs, [BlobModel])).rejects.toThrow(
        /^mail:blobs:backend "gridfs" needs the document backend \(datastore: document/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.skipIf(!withPostgres)('blobs in PostgreSQL', () => {
  let db: TestDatabase;
  let store: Store;
  let blobs: DatabaseBlobStore;
  let dir: string;
  const chunkRows = (id: string) => store.repo(BlobChunkModel).count({ blobId: id });
  beforeAll(async () => {
    db = await freshPostgres();
    dir = mkdtempSync(join(tmpdir(), 'svcmail-blobdb-'));
    store = await openSqlStore({ url: db.url, models: [BlobModel, BlobChunkModel], synchronize: true });
    blobs = new DatabaseBlobStore(loadConfigFor(db.url, dir), store);
  }, 60_000);
  afterAll(async () => {
    await store?.close();
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores content once under its sha256, in chunks, and reads and streams it back', async () => {
    const data = randomBytes(CHUNK * 2 + 1234);
    const b = await blobs.put(data);
    expect(b).toEqual({ blobId: sha(data), sha256: sha(data), size: data.length });
    expect(await chunkRows(b.blobId)).toBe(3);
    expect(sha(await blobs.get(b.blobId))).toBe(b.sha256);
    const streamed: Buffer[] = [];
    for await (const c of blobs.stream(b.blobId)) streamed.push(c as Buffer);
    expect(sha(Buffer.concat(streamed))).toBe(b.sha256);
    await blobs.put(data);
    expect(await chunkRows(b.blobId)).toBe(3);
    const empty = await blobs.put(Buffer.alloc(0));
    expect((await blobs.get(empty.blobId)).length).toBe(0);
  });

  it('a streamed upload lands in a local temporary file and is copied in on commit', async () => {
    const parts = Array.from({ length: 40 }, () => randomBytes(64 * 1024));
    const w = await blobs.writer();
    for (const p of parts) await w.write(p);
    const staged = await w.finish();
    expect(existsSync(w.tmpPath)).toBe(true);
    expect(await chunkRows(staged.sha256)).toBe(0);
    await staged.commit();
    expect(existsSync(w.tmpPath)).toBe(false);
    expect(await chunkRows(staged.sha256)).toBe(Math.ceil((40 * 64 * 1024) / CHUNK));
    expect(sha(await blobs.get(staged.blobId))).toBe(sha(Buffer.concat(parts)));
    const viaStaged: Buffer[] = [];
    for await (const c of staged.stream()) viaStaged.push(c as Buffer);
    expect(sha(Buffer.concat(viaStaged))).toBe(staged.sha256);
    // No blob file anywhere under the data directory: only the (now empty) temporary folder.
    expect(readdirSync(blobs.tmpDir)).toEqual([]);
  });

  it('an unknown blob is api-107, read or streamed', async () => {
    const unknown = 'f'.repeat(64);
    await expect(blobs.get(unknown)).rejects.toMatchObject({ code: 'api-107' });
    await expect(text(blobs.stream(unknown))).rejects.toMatchObject({ code: 'api-107' });
    await expect(blobs.get('../etc/passwd')).rejects.toMatchObject({ code: 'api-107' });
  });

  it('two writers of the same bytes at once leave one set of chunks', async () => {
    const data = randomBytes(CHUNK + 10);
    const other = new DatabaseBlobStore(loadConfigFor(db.url, dir), store);
    await Promise.all([blobs.put(data), other.put(data), blobs.putStream(Readable.from([data]))]);
    expect(await chunkRows(sha(data))).toBe(2);
    expect(sha(await other.get(sha(data)))).toBe(sha(data));
  });

  it('a released blob stays readable, is taken back by a writer that needs it, and is swept after the grace period', async () => {
    const data = randomBytes(5000);
    const id = sha(data);
    await blobs.put(data);
    expect(await releaseBlobs(store, blobs, [id])).toBe(1);
    expect((await blobs.released()).map((r) => r.id)).toContain(id);
    expect(sha(await blobs.get(id))).toBe(id); // readable meanwhile
    // A hand-off of the same bytes races the release: the writer takes it back.
    await blobs.put(data);
    expect((await blobs.released()).map((r) => r.id)).not.toContain(id);

    // Released again; a record names it before the sweep: the sweep restores it.
    await releaseBlobs(store, blobs, [id]);
    await addBlobRefs(store, [{ blobId: id, sha256: id, size: data.length }]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 0, restored: 1 });
    expect((await blobs.released()).map((r) => r.id)).not.toContain(id);

    // Nothing needs it any more: released, then deleted by the sweep once the grace period is over.
    await store.repo(BlobModel).delete(id);
    await releaseBlobs(store, blobs, [id]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 60_000 })).toEqual({ deleted: 0, restored: 0 });
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 1, restored: 0 });
    expect(await chunkRows(id)).toBe(0);
    await expect(blobs.get(id)).rejects.toMatchObject({ code: 'api-107' });
  });
});

function loadConfigFor(url: string, dataDir: string) {
  return loadConfig({
    env: { NODE_ENV: 'test' },
    values: { data_dir: dataDir, 'datastores:sql:url': url, 'mail:blobs:backend': 'database' },
  });
}

describe.skipIf(!withPostgres)('two copies sharing blobs through PostgreSQL', () => {
  const settings = { 'mail:blobs:backend': 'database' };
  const pg = backends.find((b) => b.name === 'postgres')!;
  let a: IngestFixture;
  let copyB: SecondCopy;
  let b: TestApi;
  let bData: string;
  beforeAll(async () => {
    a = await ingestFixture(pg, settings);
    // Copy B: the same database, a data directory of its own, the same blob backend.
    copyB = await secondCopy(a, 'postgres', settings);
    b = copyB.api;
    bData = copyB.dataDir;
  }, 60_000);
  afterAll(async () => {
    await copyB?.close();
    await a?.close();
  });

  it("a message handed off through one copy is filed by the other copy's worker and read through both", async () => {
    const r = await a.deliver({ to: ['alice@example.test'], raw: message({ subject: 'blob in the database' }) });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await copyB.drain();
    const entry = (await b.deps.store.repo<IngestEntry>(IngestEntryModel).findOne({ transactionId: r.body.transactionId }))!;
    expect(entry.state).toBe('delivered');
    expect(blobsOf(b.deps)).toBeInstanceOf(DatabaseBlobStore);
    expect(await b.deps.store.repo(BlobChunkModel).count({ blobId: entry.rawRef })).toBe(1);
    for (const api of [a.api, b]) {
      const res = await fetch(`${api.url}/api/mail/messages/${entry.messageUid}/raw`, {
        headers: { authorization: `Bearer ${a.users.alice}` },
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('blob in the database');
    }
    // No copy wrote a blob file: at most the temporary folder of streamed uploads, empty.
    for (const data of [a.dataDir, bData]) {
      const blobDir = join(data, 'blobs');
      const left = existsSync(blobDir) ? readdirSync(blobDir).filter((n) => n !== 'tmp') : [];
      expect(left).toEqual([]);
      if (existsSync(join(blobDir, 'tmp'))) expect(readdirSync(join(blobDir, 'tmp'))).toEqual([]);
    }
  });
});
