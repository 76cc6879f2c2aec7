// The document adapter's write documents and its record shape, checked without a server: records
// travel through real BSON (the driver's own serializer) and back; update documents are applied by
// mingo's updater and compared with what SQLite's writes leave; the start-up and error decisions
// are checked on the server answers they read. See _document.ts.
import mongoose from 'mongoose';
import { Query } from 'mingo';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ApiError } from '../../../lib/errors/index.js';
import { mapError } from '../../../lib/storage/document/errors.js';
import { upsertOf } from '../../../lib/storage/document/many.js';
import { databaseOf, redactedUrl, transactionProblem } from '../../../lib/storage/document/open.js';
import { indexSpecs } from '../../../lib/storage/document/schema.js';
import { fromDocument, setOf, toDocument, valuesOf, wordsOf, type Doc } from '../../../lib/storage/document/shape.js';
import { filterOf } from '../../../lib/storage/document/translate.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { Value, VALUE_CASES, type ValueT } from '../../integration/storage/_contract.js';
import { mingoUpdate, pair, Thing, type Pair } from './_document.js';

const { BSON } = mongoose.mongo;
const viaBson = (doc: Doc): Doc => BSON.deserialize(BSON.serialize(doc));
/** A record without the timestamp every write moves. */
const settled = (r: Record<string, unknown>) => ({ ...r, updatedAt: undefined });

let p: Pair;
beforeAll(async () => {
  p = await pair(Thing, 40);
});
afterAll(async () => p?.store.close());

describe('document adapter: the record shape', () => {
  it('every kind of value comes back from BSON exactly as SQLite gives it back (JSON, dates, big integers, bytes)', async () => {
    const store = await openSqlStore({ url: 'sqlite::memory:', models: [Value], synchronize: true });
    try {
      const values = store.repo<ValueT>(Value);
      for (const [i, c] of VALUE_CASES.entries()) {
        const stored = await values.create({ key: `k${i}`, ...c });
        const fromSql = await values.get(stored.uid);
        const fromDoc = fromDocument(Value, viaBson(toDocument(Value, stored)));
        expect(fromDoc).toEqual(fromSql);
        expect(JSON.stringify(fromDoc)).toBe(JSON.stringify(fromSql));
      }
    } finally {
      await store.close();
    }
  });

  it('keeps JSON with keys no BSON field may have, and bytes as binary', () => {
    const Blob = { ...Value, name: 'b', columns: { ...Value.columns, data: { kind: 'bytes' as const, nullable: false } } };
    const rec = {
      uid: 'u1',
      version: 1,
      createdAt: new Date(0),
      updatedAt: new Date(0),
      key: 'k',
      text: null,
      big: 1,
      real: 1,
      on: true,
      at: null,
    };
    const meta = { 'a.b': { $where: 'x' }, list: [{ '': 1 }] };
    const data = Buffer.from([0, 1, 2, 255]);
    const back = fromDocument(Blob, viaBson(toDocument(Blob, { ...rec, meta, data })));
    expect(back.meta).toEqual(meta);
    expect(Buffer.isBuffer(back.data) && (back.data as Buffer).equals(data)).toBe(true);
  });

  it('keeps a value index’s values and a document’s words as arrays, folded as queries fold them', () => {
    const doc = toDocument(Thing, { ...p.docs[0], uid: 'u', tags: ['Beta', 'beta', 'x'], to: ['A@B.test'] });
    expect(doc._v).toEqual({ labels: ['Beta', 'beta', 'x'], rcpt: ['a@b.test'] });
    expect(wordsOf('Café CAFE café; a@b.example ÉLAN')).toEqual(['cafe', 'a', 'b', 'example', 'elan']);
    expect(wordsOf('w '.repeat(30_000) + Array.from({ length: 30_000 }, (_, i) => `u${i}`).join(' ')).length).toBe(20_000);
  });
});

describe('document adapter: update documents do what SQLite’s writes do', () => {
  const docOf = (uid: string) => p.docs.find((d) => d._id === uid)!;

  it('a patch ($set, version raised by one) leaves the record SQLite leaves', async () => {
    const target = p.docs[3];
    const patch = { name: 'renamed', score: null, flagged: true, seenAt: new Date(Date.UTC(2027, 1, 2)), tags: ['new'] };
    const update = { $inc: { version: 1 }, $set: { ...setOf(Thing, patch), updatedAt: new Date() } };
    const mine = fromDocument(Thing, viaBson(mingoUpdate(target, update)));
    const sql = await p.repo.update(String(target._id), patch);
    expect(settled(mine)).toEqual(settled(sql as never));
  });

  it('a patch of a value index’s field recomputes its values from the record as patched', async () => {
    const target = p.docs[7];
    const patch = { tags: ['zeta', 'Fresh'] };
    const merged = { ...fromDocument(Thing, target), ...patch };
    const mine = mingoUpdate(target, { $inc: { version: 1 }, $set: { ...setOf(Thing, patch), _v: valuesOf(Thing, merged) } });
    await p.repo.update(String(target._id), patch);
    await p.reload();
    expect(mine._v).toEqual(docOf(String(target._id))._v);
    const q = filterOf(Thing, { labels: { $has: 'Fresh' } });
    expect(new Query(q).find<Doc>([mine]).all()).toHaveLength(1);
  });

  it('increments ($inc) leave the counts SQLite leaves', async () => {
    const target = p.docs[5];
    const mine = fromDocument(Thing, mingoUpdate(target, { $inc: { size: 5, score: -0.5, version: 1 }, $set: { updatedAt: new Date() } }));
    const sql = await p.repo.increment(String(target._id), { size: 5, score: -0.5 });
    expect(settled(mine)).toEqual(settled(sql as never));
  });

  it('a lease released: claimedBy and leaseUntil cleared with the patch', async () => {
    const target = p.docs[9];
    await p.repo.update(String(target._id), { claimedBy: 'w1', leaseUntil: new Date(Date.now() + 60_000) } as never);
    await p.reload();
    const before = docOf(String(target._id));
    const patch = { size: 99, claimedBy: null, leaseUntil: null };
    const mine = fromDocument(
      Thing,
      mingoUpdate(before, { $set: { ...setOf(Thing, patch), updatedAt: new Date() }, $inc: { version: 1 } }),
    );
    expect(await p.repo.release(String(target._id), 'w1', { size: 99 })).toBe(true);
    expect(settled(mine)).toEqual(settled((await p.repo.get(String(target._id))) as never));
  });
});

describe('document adapter: createOrAdd as an upsert', () => {
  const Counter = { ...Value, name: 'counter', table: 'counters' };

  it('inserts with $setOnInsert and $inc, adds to an existing record with $inc only, as SQLite does', async () => {
    const store = await openSqlStore({ url: 'sqlite::memory:', models: [Counter], synchronize: true });
    try {
      const repo = store.repo<ValueT>(Counter);
      const first = { uid: 'c1', key: 'k', text: 'kept', big: 3, real: 0.5, on: true, meta: { a: 1 }, at: null };
      const up = upsertOf(Counter, { ...first, version: 1, createdAt: new Date(), updatedAt: new Date() }, ['big', 'real'], new Date());
      // MongoDB's upsert that inserts: the filter's equality, then $setOnInsert, $set and $inc.
      let doc = mingoUpdate({ ...up.filter, ...up.update.$setOnInsert }, { $set: up.update.$set, $inc: up.update.$inc });
      await repo.createOrAdd(first, ['big', 'real']);
      expect(settled(fromDocument(Counter, viaBson(doc)))).toEqual({
        ...settled((await repo.get('c1')) as never),
        createdAt: expect.any(Date),
      });
      // The upsert that finds it: $setOnInsert does nothing, the rest adds.
      const again = upsertOf(
        Counter,
        { ...first, text: 'ignored', big: 4, real: 1, version: 1, createdAt: new Date(), updatedAt: new Date() },
        ['big', 'real'],
        new Date(),
      );
      doc = mingoUpdate(doc, { $set: again.update.$set, $inc: again.update.$inc });
      await repo.createOrAdd({ ...first, text: 'ignored', big: 4, real: 1 }, ['big', 'real']);
      const sql = (await repo.get('c1'))!;
      expect(sql).toMatchObject({ big: 7, real: 1.5, text: 'kept', version: 2 });
      expect(settled({ ...fromDocument(Counter, viaBson(doc)), createdAt: sql.createdAt })).toEqual(settled(sql as never));
    } finally {
      await store.close();
    }
  });
});

describe('document adapter: indexes, start-up and errors', () => {
  it('declares the model’s indexes, the lease, each value index (with its scope) and the words', () => {
    expect(indexSpecs(Thing)).toEqual([
      { name: 'svc_owner__size', key: { owner: 1, size: 1 } },
      { name: 'svc_name', key: { name: 1 }, unique: true },
      { name: 'svc_leaseUntil', key: { leaseUntil: 1 } },
      { name: 'svc_owner___v_labels', key: { owner: 1, '_v.labels': 1 } },
      { name: 'svc__v_rcpt', key: { '_v.rcpt': 1 } },
      { name: 'svc__w', key: { _w: 1 } },
    ]);
  });

  it('a unique index over a nullable field leaves NULLs out of it (SQL lets them repeat)', () => {
    const Named = { ...Thing, indexes: [{ fields: ['seenAt'], unique: true }] };
    const [spec] = indexSpecs(Named);
    expect(spec.partialFilterExpression).toEqual({ seenAt: { $type: 'date' } });
    const docs = p.docs.map((d) => ({ ...d }));
    const inIndex = new Query(spec.partialFilterExpression!).find<Doc>(docs).all();
    expect(inIndex.length).toBe(docs.filter((d) => d.seenAt !== null).length);
  });

  it('refuses a standalone server with what to do; accepts a replica set member and mongos', () => {
    expect(transactionProblem({ isWritablePrimary: true })).toMatch(/standalone.*replica set.*rs\.initiate\(\)/);
    expect(transactionProblem({ isWritablePrimary: true, setName: 'rs0' })).toBeNull();
    expect(transactionProblem({ msg: 'isdbgrid' })).toBeNull();
    expect(redactedUrl('mongodb://svc:secret@db1:27017,db2/mail?replicaSet=rs0')).toBe('mongodb://db1:27017,db2/mail?replicaSet=rs0');
    // The database is the URL's path, also after a list of hosts with ports (which new URL refuses).
    expect(databaseOf('mongodb://h1:27017,h2:27017,h3:27017/svcmail?replicaSet=rs0')).toBe('svcmail');
    expect(databaseOf('mongodb://u:p%40ss@h1:27017,h2:27018/mail%2Dprod?replicaSet=rs0')).toBe('mail-prod');
    expect(databaseOf('mongodb+srv://cluster.example.test/?retryWrites=true')).toBe('svcmail');
    expect(databaseOf('mongodb://h1')).toBe('svcmail');
  });

  it('maps duplicate keys (alone and inside a bulk write) to api-112 and a server that does not answer to api-113', () => {
    const { MongoServerError, MongoBulkWriteError, MongoServerSelectionError, MongoNetworkError } = mongoose.mongo;
    expect(mapError(new MongoServerError({ code: 11000, errmsg: 'E11000 duplicate key' }))).toMatchObject({ code: 'api-112' });
    const bulk = new MongoBulkWriteError(
      { message: 'bulk', code: 11000, writeErrors: [{ index: 1, code: 11000, errmsg: 'E11000' }] } as never,
      { insertedCount: 1 } as never,
    );
    expect(mapError(bulk)).toMatchObject({ code: 'api-112' });
    expect(mapError(new MongoServerSelectionError('no server', {} as never))).toMatchObject({ code: 'api-113' });
    expect(mapError(new MongoNetworkError('reset'))).toMatchObject({ code: 'api-113' });
    // A bulk write wraps the driver's own failure (its errorResponse): still a datastore that does not answer.
    expect(mapError(new MongoBulkWriteError(new MongoNetworkError('reset') as never, {} as never))).toMatchObject({ code: 'api-113' });
    // Inside a transaction an error withTransaction retries (a write conflict, a lost connection) reaches it untouched.
    const conflict = new MongoServerError({ code: 112, errmsg: 'WriteConflict' });
    conflict.addErrorLabel('TransientTransactionError');
    expect(mapError(conflict, false)).toBe(conflict);
    const lost = new MongoNetworkError('reset');
    lost.addErrorLabel('TransientTransactionError');
    expect(mapError(lost, false)).toBe(lost);
    expect(mapError(lost)).toMatchObject({ code: 'api-113' });
    const other = new MongoServerError({ code: 2, errmsg: 'bad value' });
    expect(mapError(other)).toBe(other);
    expect(mapError(new ApiError('api-108'))).toMatchObject({ code: 'api-108' });
  });
});
