// The document backend's collections and indexes from the models (datastores:document:synchronize),
// on the in-memory stand-in (test/helpers/mongo-memory.ts: collections and indexes as a server keeps
// them, with its conflict errors): everything made on a fresh database and nothing changed on the
// next start; an index that differs from the model's, or that no model declares, reported and left
// as it is; what a database lacks named for svcmail doctor.
import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { indexSpecs } from '../../../lib/storage/document/schema.js';
import { openMemoryDocumentStore } from '../../helpers/mongo-memory.js';
import { Doc, Job, Thing, Value } from './_contract.js';

const fresh = () => `memory:schema-${randomBytes(4).toString('hex')}`;
const models = [Thing, Job, Doc, Value];

describe('document backend: collections and indexes from the models', () => {
  it('makes every collection and declared index on a fresh database, and finds nothing to change the next time', async () => {
    const url = fresh();
    const first = await openMemoryDocumentStore(url, models);
    expect(first.indexProblems).toEqual([]);
    expect(await first.schemaProblems()).toEqual([]);
    const db = first.mongoDatabase();
    const names = (await db.listCollections().toArray()).map((c: { name: string }) => c.name).sort();
    expect(names).toEqual(models.map((m) => m.table).sort());
    const thingIndexes = (await db.collection(Thing.table).indexes()).map((i: { name?: string }) => i.name).sort();
    expect(thingIndexes).toEqual(['_id_', ...indexSpecs(Thing).map((s) => s.name)].sort());
    const again = await openMemoryDocumentStore(url, models);
    expect(again.indexProblems).toEqual([]);
  });

  it('reports an index that differs from the model’s and one no model declares, and leaves both as they are', async () => {
    const url = fresh();
    const store = await openMemoryDocumentStore(url, [Value]);
    const coll = store.mongoDatabase().collection(Thing.table);
    await store.mongoDatabase().createCollection(Thing.table);
    // An administrator's own index, and the model's unique name index made without unique.
    await coll.createIndex({ owner: 1 }, { name: 'by_owner' });
    await coll.createIndex({ name: 1 }, { name: 'svc_name' });
    const next = await openMemoryDocumentStore(url, [Value, Thing]);
    expect(next.indexProblems).toEqual([
      expect.stringMatching(/^contract_things: index svc_name differs from the model's .*; left as it is$/),
      'contract_things: index by_owner is not declared by the model; left as it is',
    ]);
    const kept = (await coll.indexes()).find((i: { name?: string }) => i.name === 'svc_name') as { unique?: boolean };
    expect(kept.unique).toBeUndefined();
    expect(await next.schemaProblems()).toEqual([
      "contract_things: index svc_name differs from the model's; left as it is",
      'contract_things: index by_owner is not declared by the model; left as it is',
    ]);
  });

  it('names what an unsynchronized database lacks (svcmail doctor fails the datastore check on it)', async () => {
    const store = await openMemoryDocumentStore(fresh(), models, false);
    const problems = await store.schemaProblems();
    expect(problems).toEqual(models.map((m) => `collection ${m.table} missing`));
  });
});
