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
import { secondCopy, type SecondCopy } from './_copies.js';
import { blobStoreContract } from './_blob-contract.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../../lib/config/index.js';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { blobsOf } from '../../../lib/mail/index.js';
import {
  BlobChunkModel,
  BlobModel,
  bytesField,
  DatabaseBlobStore,
  defineModel,
  openSqlStore,
  openStore,
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

  blobStoreContract(
    () => ({
      store,
      blobs,
      other: () => new DatabaseBlobStore(loadConfigFor(db.url, dir), store),
      held: (id) => store.repo(BlobChunkModel).count({ blobId: id }),
      // Chunks of at most CHUNK bytes; an empty blob is one empty chunk.
      expected: (size) => Math.max(1, Math.ceil(size / CHUNK)),
      dedupes: true,
    }),
    { big: CHUNK * 2 + 1234 },
  );
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
