// An in-memory stand-in for a MongoDB replica set, for running the Store contract suite on the
// document adapter on machines where no MongoDB server can be installed (../shared/TESTING.md). It
// is the subset of the driver's Db / Collection / ClientSession the adapter calls, and unlike the
// stand-ins on npm it keeps the promises the adapter relies on:
// - documents are kept as BSON bytes (the driver's own serializer): what is read is what a server
//   would answer (Dates, Binary, numbers), and nothing can share objects with the caller;
// - queries, sorts, projections and update operators are mingo's (MongoDB's query language);
// - `_id` and the models' unique indexes (with their partial filters) are enforced: a duplicate is
//   E11000, in bulk writes a MongoBulkWriteError naming the write;
// - transactions work on a snapshot and commit all or nothing; a write another writer changed since
//   the snapshot is a write conflict labelled TransientTransactionError, which withTransaction runs
//   again, as the driver does; a duplicate key inside a transaction aborts it (later calls fail).
// It is not MongoDB: results are verified against a real replica set only with SVCMAIL_TEST_MONGO_URL.
import { randomBytes } from 'node:crypto';
import { Query, updateOne as mingoUpdateOne } from 'mingo';
import mongoose from 'mongoose';
import type { ModelDef } from '../../lib/storage/index.js';
import { DocumentStore } from '../../lib/storage/document/adapter.js';
import { backfillValues, indexSpecs, synchronize, type IndexSpec } from '../../lib/storage/document/schema.js';
import type { Backend, TestDatabase } from './databases.js';

const { BSON, MongoServerError, MongoBulkWriteError } = mongoose.mongo;
type Doc = Record<string, unknown>;
type Rows = Map<string, Buffer>;

/** What a server answers in a transaction a failed write aborted: labelled, so withTransaction runs it again. */
function noSuchTransaction(): InstanceType<typeof MongoServerError> {
  const e = new MongoServerError({ code: 251, codeName: 'NoSuchTransaction', errmsg: 'transaction aborted' });
  e.addErrorLabel('TransientTransactionError');
  return e;
}

const dup = (index = 0) => new MongoServerError({ code: 11000, errmsg: `E11000 duplicate key error (write ${index})` });

class Conflict extends MongoServerError {
  constructor() {
    super({ code: 112, codeName: 'WriteConflict', errmsg: 'WriteConflict' });
    this.addErrorLabel('TransientTransactionError');
  }
}

/** A snapshot of the collections a transaction touched, with the revisions it started from. */
interface Tx {
  rows: Map<string, Rows>;
  revs: Map<string, Map<string, number>>;
  touched: Map<string, Set<string>>;
  aborted: boolean;
}

/** What every store opened on one stand-in database shares. */
interface Data {
  rows: Map<string, Rows>;
  revs: Map<string, Map<string, number>>;
  unique: Map<string, IndexSpec[]>;
  /** Collections made (createCollection) and the indexes created on each, by name. */
  made: Map<string, Map<string, { name: string; key: Record<string, number>; unique?: boolean }>>;
}

/** One store's view of a stand-in database (closing it closes only this view, as closing a client does). */
export class MemoryDb {
  closed = false;
  constructor(readonly data: Data) {}

  get unique(): Map<string, IndexSpec[]> {
    return this.data.unique;
  }

  collection(name: string): MemoryCollection {
    return new MemoryCollection(this, name);
  }

  async command(): Promise<Record<string, unknown>> {
    this.check();
    return { ok: 1 };
  }

  async createCollection(name: string): Promise<void> {
    if (this.data.made.has(name)) throw new MongoServerError({ code: 48, codeName: 'NamespaceExists', errmsg: `${name} exists` });
    this.data.made.set(name, new Map([['_id_', { name: '_id_', key: { _id: 1 } }]]));
  }

  listCollections() {
    return { toArray: async () => [...this.data.made.keys()].map((name) => ({ name })) };
  }

  admin() {
    return { buildInfo: async () => ({ version: 'in-memory stand-in' }), command: async () => ({ setName: 'memory', ok: 1 }) };
  }

  check(): void {
    if (this.closed) {
      const e = new Error('Client must be connected before running operations');
      e.name = 'MongoNotConnectedError';
      throw e;
    }
  }

  base(name: string): Rows {
    let r = this.data.rows.get(name);
    if (!r) this.data.rows.set(name, (r = new Map()));
    return r;
  }

  rev(name: string): Map<string, number> {
    let r = this.data.revs.get(name);
    if (!r) this.data.revs.set(name, (r = new Map()));
    return r;
  }
}

class MemorySession {
  tx: Tx | null = null;
  constructor(private readonly db: MemoryDb) {}

  /** The rows a call sees: the transaction's snapshot inside one, else the committed rows. */
  rows(name: string): Rows {
    if (!this.tx) return this.db.base(name);
    if (this.tx.aborted) throw noSuchTransaction();
    let r = this.tx.rows.get(name);
    if (!r) {
      this.tx.rows.set(name, (r = new Map(this.db.base(name))));
      this.tx.revs.set(name, new Map(this.db.rev(name)));
      this.tx.touched.set(name, new Set());
    }
    return r;
  }

  touch(name: string, id: string): void {
    this.tx?.touched.get(name)?.add(id);
  }

  async withTransaction<R>(fn: (s: MemorySession) => Promise<R>): Promise<R> {
    for (let attempt = 1; ; attempt++) {
      this.tx = { rows: new Map(), revs: new Map(), touched: new Map(), aborted: false };
      try {
        const r = await fn(this);
        this.#commit();
        return r;
      } catch (e) {
        if (!(e instanceof MongoServerError && e.hasErrorLabel('TransientTransactionError')) || attempt >= 50) throw e;
        await new Promise((res) => setTimeout(res, Math.random() * 5));
      } finally {
        this.tx = null;
      }
    }
  }

  /** Checks everything first (revisions, then unique keys on the rows as they would be), then applies it all. */
  #commit(): void {
    const tx = this.tx!;
    if (tx.aborted) throw noSuchTransaction();
    for (const [name, ids] of tx.touched)
      for (const id of ids) if (this.db.rev(name).get(id) !== tx.revs.get(name)!.get(id)) throw new Conflict();
    for (const [name, ids] of tx.touched) {
      const next = new Map(this.db.base(name));
      const view = tx.rows.get(name)!;
      for (const id of ids) {
        const row = view.get(id);
        if (row) next.set(id, row);
        else next.delete(id);
      }
      // A unique key another transaction took meanwhile: the same conflict a server reports.
      for (const id of ids) if (next.has(id) && clash(this.db, name, next, decode(next.get(id)!))) throw new Conflict();
    }
    for (const [name, ids] of tx.touched) {
      const base = this.db.base(name);
      const view = tx.rows.get(name)!;
      for (const id of ids) {
        const row = view.get(id);
        if (row) base.set(id, row);
        else base.delete(id);
        this.db.rev(name).set(id, (this.db.rev(name).get(id) ?? 0) + 1);
      }
    }
  }

  async endSession(): Promise<void> {}
}

const decode = (b: Buffer): Doc => BSON.deserialize(b);
/** The key a document is kept under: its _id as text (an ObjectId's hex, GridFS's ids). */
const idKey = (id: unknown): string => (typeof id === 'string' ? id : `oid:${String(id)}`);
const sortSpec = (sort: Opts['sort']): Record<string, 1 | -1> | undefined =>
  sort === undefined ? undefined : Array.isArray(sort) ? Object.fromEntries(sort) : sort;
const encode = (d: Doc): Buffer => Buffer.from(BSON.serialize(d));

function keyOf(spec: IndexSpec, doc: Doc): string | null {
  if (spec.partialFilterExpression && !new Query(spec.partialFilterExpression).test(doc)) return null;
  return JSON.stringify(Object.keys(spec.key).map((f) => f.split('.').reduce<unknown>((v, k) => (v as Doc | undefined)?.[k], doc) ?? null));
}

/** Whether doc meets another document of the rows on a unique index. */
function clash(db: MemoryDb, name: string, rows: Rows, doc: Doc): boolean {
  for (const spec of db.unique.get(name) ?? []) {
    const key = keyOf(spec, doc);
    if (key === null) continue;
    for (const [id, row] of rows) if (id !== idKey(doc._id) && keyOf(spec, decode(row)) === key) return true;
  }
  return false;
}

interface Opts {
  session?: MemorySession;
  sort?: Array<[string, 1 | -1]> | Record<string, 1 | -1>;
  skip?: number;
  projection?: Doc;
  limit?: number;
  returnDocument?: 'before' | 'after';
  upsert?: boolean;
  ordered?: boolean;
}

class MemoryCursor {
  #skip = 0;
  #limit = 0;
  #sort: Record<string, 1 | -1> | undefined;
  #pending: Doc[] | null = null;
  constructor(
    private readonly docs: () => Doc[],
    private readonly opts: Opts,
  ) {
    this.#limit = opts.limit ?? 0;
    this.#sort = sortSpec(opts.sort);
  }
  skip(n: number) {
    this.#skip = n;
    return this;
  }
  limit(n: number) {
    this.#limit = n;
    return this;
  }
  sort(spec: Record<string, 1 | -1>) {
    this.#sort = spec;
    return this;
  }
  withReadPreference() {
    return this;
  }
  async toArray(): Promise<Doc[]> {
    let c = new Query({}).find<Doc>(this.docs(), this.opts.projection);
    if (this.#sort) c = c.sort(this.#sort);
    if (this.#skip) c = c.skip(this.#skip);
    if (this.#limit) c = c.limit(this.#limit);
    return c.all();
  }
  /** One document at a time (GridFS reads chunks so), from the results as they were at the first call. */
  async next(): Promise<Doc | null> {
    this.#pending ??= await this.toArray();
    return this.#pending.shift() ?? null;
  }
  async close(): Promise<void> {}
}

class MemoryCollection {
  constructor(
    private readonly db: MemoryDb,
    private readonly name: string,
  ) {}

  #rows(o: Opts = {}): Rows {
    this.db.check();
    return o.session ? o.session.rows(this.name) : this.db.base(this.name);
  }

  #matching(filter: Doc, o: Opts = {}): Doc[] {
    const q = new Query(filter);
    return [...this.#rows(o).values()].map(decode).filter((d) => q.test(d));
  }

  /** Writes a document (or removes it: null), checking _id and unique indexes first. */
  #put(o: Opts, id: string, doc: Doc | null, index = 0, insert = false): void {
    const rows = this.#rows(o);
    if (doc) {
      if ((insert && rows.has(id)) || clash(this.db, this.name, rows, doc)) {
        if (o.session?.tx) o.session.tx.aborted = true;
        throw dup(index);
      }
      rows.set(id, encode(doc));
    } else rows.delete(id);
    if (o.session?.tx) o.session.touch(this.name, id);
    else this.db.rev(this.name).set(id, (this.db.rev(this.name).get(id) ?? 0) + 1);
  }

  #first(filter: Doc, o: Opts): Doc | undefined {
    return new Query({})
      .find<Doc>(this.#matching(filter, o))
      .sort(sortSpec(o.sort) ?? { _id: 1 })
      .skip(o.skip ?? 0)
      .limit(1)
      .all()[0];
  }

  #apply(doc: Doc, update: Doc): Doc {
    const { $setOnInsert: _ignored, ...rest } = update;
    void _ignored;
    mingoUpdateOne([doc], { _id: doc._id }, rest as never);
    return doc;
  }

  #project(doc: Doc | undefined, o: Opts): Doc | null {
    return doc ? new Query({}).find<Doc>([doc], o.projection).all()[0] : null;
  }

  find(filter: Doc, o: Opts = {}) {
    return new MemoryCursor(() => this.#matching(filter, o), o);
  }

  async findOne(filter: Doc, o: Opts = {}) {
    return this.#project(o.sort || o.skip ? this.#first(filter, o) : this.#matching(filter, o)[0], o);
  }

  /**
   * The indexes created (synchronize, GridFS). As a server does: the same name with other keys is
   * IndexKeySpecsConflict (86), with other options IndexOptionsConflict (85). Uniqueness is enforced
   * from the models' declarations (openMemoryDocumentStore), whichever indexes were created.
   */
  listIndexes() {
    return { toArray: async () => this.indexes() };
  }

  async indexes() {
    return [...(this.db.data.made.get(this.name)?.values() ?? [])];
  }

  async createIndex(key: Record<string, number>, options: { name?: string; unique?: boolean } = {}): Promise<string> {
    let made = this.db.data.made.get(this.name);
    if (!made) this.db.data.made.set(this.name, (made = new Map([['_id_', { name: '_id_', key: { _id: 1 } }]])));
    const name =
      options.name ??
      Object.entries(key)
        .map(([k, v]) => `${k}_${v}`)
        .join('_');
    const had = made.get(name);
    if (had && JSON.stringify(had.key) !== JSON.stringify(key))
      throw new MongoServerError({ code: 86, codeName: 'IndexKeySpecsConflict', errmsg: `index ${name} exists with other keys` });
    if (had && Boolean(had.unique) !== Boolean(options.unique))
      throw new MongoServerError({ code: 85, codeName: 'IndexOptionsConflict', errmsg: `index ${name} exists with other options` });
    made.set(name, { name, key, ...(options.unique ? { unique: true } : {}) });
    return name;
  }

  async countDocuments(filter: Doc, o: Opts = {}) {
    return this.#matching(filter, o).length;
  }

  async insertOne(doc: Doc, o: Opts = {}) {
    this.#put(o, idKey(doc._id), doc, 0, true);
    return { insertedId: doc._id };
  }

  async insertMany(docs: Doc[], o: Opts = {}) {
    const errors: Array<{ index: number; code: number; errmsg: string }> = [];
    for (const [i, d] of docs.entries()) {
      try {
        this.#put(o, idKey(d._id), d, i, true);
      } catch (e) {
        errors.push({ index: i, code: 11000, errmsg: (e as Error).message });
        if (o.ordered !== false) break;
      }
    }
    if (errors.length) throw new MongoBulkWriteError({ message: 'E11000', code: 11000, writeErrors: errors } as never, {} as never);
    return { insertedCount: docs.length };
  }

  async findOneAndUpdate(filter: Doc, update: Doc, o: Opts = {}) {
    const doc = this.#first(filter, o);
    if (!doc) return null;
    const before = structuredClone(doc);
    const after = this.#apply(doc, update);
    this.#put(o, idKey(doc._id), after);
    return this.#project(o.returnDocument === 'after' ? after : before, o);
  }

  async updateOne(filter: Doc, update: Doc, o: Opts = {}) {
    const doc = this.#first(filter, o);
    if (doc) {
      this.#put(o, idKey(doc._id), this.#apply(doc, update));
      return { matchedCount: 1, modifiedCount: 1, upsertedCount: 0 };
    }
    if (!o.upsert) return { matchedCount: 0, modifiedCount: 0, upsertedCount: 0 };
    const fresh = this.#apply({ _id: filter._id, ...((update.$setOnInsert as Doc) ?? {}) }, update);
    this.#put(o, idKey(fresh._id), fresh, 0, true);
    return { matchedCount: 0, modifiedCount: 0, upsertedCount: 1 };
  }

  async updateMany(filter: Doc, update: Doc, o: Opts = {}) {
    const docs = this.#matching(filter, o);
    for (const d of docs) this.#put(o, idKey(d._id), this.#apply(d, update));
    return { matchedCount: docs.length, modifiedCount: docs.length };
  }

  async deleteOne(filter: Doc, o: Opts = {}) {
    const doc = this.#first(filter, o);
    if (doc) this.#put(o, idKey(doc._id), null);
    return { deletedCount: doc ? 1 : 0 };
  }

  async deleteMany(filter: Doc, o: Opts = {}) {
    const docs = this.#matching(filter, o);
    for (const d of docs) this.#put(o, idKey(d._id), null);
    return { deletedCount: docs.length };
  }

  async bulkWrite(ops: Array<{ updateOne: { filter: Doc; update: Doc; upsert?: boolean } }>, o: Opts = {}) {
    for (const [i, op] of ops.entries()) {
      try {
        await this.updateOne(op.updateOne.filter, op.updateOne.update, { ...o, upsert: op.updateOne.upsert });
      } catch (e) {
        throw new MongoBulkWriteError(
          { message: (e as Error).message, code: 11000, writeErrors: [{ index: i, code: 11000, errmsg: 'E11000' }] } as never,
          {} as never,
        );
      }
    }
    return {};
  }
}

const databases = new Map<string, Data>();

/**
 * A DocumentStore over the stand-in database of this name (made on first use; the same data when
 * opened again), its collections and indexes synchronized from the models as openDocumentStore does.
 */
export async function openMemoryDocumentStore(url: string, models: ModelDef[], sync = true): Promise<DocumentStore> {
  let data = databases.get(url);
  if (!data) databases.set(url, (data = { rows: new Map(), revs: new Map(), unique: new Map(), made: new Map() }));
  for (const m of models)
    data.unique.set(
      m.table,
      indexSpecs(m).filter((s) => s.unique),
    );
  const db = new MemoryDb(data);
  const client = { startSession: () => new MemorySession(db) };
  // As openDocumentStore does at every open.
  const problems = sync ? await synchronize(db as never, models) : [];
  await backfillValues(db as never, models);
  return new DocumentStore(
    {
      client,
      db,
      models: new Map(models.map((m) => [m.name, m])),
      session: null,
      bucket: (bucketName: string) => new mongoose.mongo.GridFSBucket(db as never, { bucketName }),
    } as never,
    problems,
    async () => {
      db.closed = true;
    },
  );
}

/** The contract suite's backend on the stand-in (named as such in every test title). */
export function memoryDocumentBackend(): Backend {
  return {
    name: 'document (in-memory stand-in)',
    async open(): Promise<TestDatabase> {
      const url = `memory:${randomBytes(6).toString('hex')}`;
      return { url, drop: async () => void databases.delete(url) };
    },
    openStore: (url, models) => openMemoryDocumentStore(url, models),
  };
}
