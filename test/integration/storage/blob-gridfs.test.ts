// Blobs in GridFS (mail:blobs:backend: gridfs, with datastore: document): the promises of the file
// store — content addressed, whole or absent, streamed, released and swept with a grace period, taken
// back by a writer that needs it again — on the replica set SVCMAIL_TEST_MONGO_URL names. None can be
// installed on these machines (../shared/TESTING.md), so the driver's GridFS code also runs on the
// in-memory stand-in; in CI with the variable set and the server unreachable it fails.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { BlobModel, openBlobStore, type BlobStore } from '../../../lib/storage/index.js';
import type { DocumentStore } from '../../../lib/storage/document/adapter.js';
import { documentBackends, openStoreOf, type TestDatabase } from '../../helpers/databases.js';
import { blobStoreContract } from './_blob-contract.js';
import { memoryDocumentBackend } from '../../helpers/mongo-memory.js';

// The replica set when one is named, and always the in-memory stand-in (test/helpers/mongo-memory.ts), on which the driver's own GridFS code runs.
const backends = [...(await documentBackends()), memoryDocumentBackend()];

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

  blobStoreContract(
    () => ({
      store,
      blobs,
      other: () => openBlobStore(configFor(db.url), store),
      held: files,
      // One file per blob, whatever its size.
      expected: () => 1,
      dedupes: false,
    }),
    { big: 600_000 },
  );
});
