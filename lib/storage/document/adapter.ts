import { ApiError } from '../../errors/index.js';
import { touchesValues, type ModelDef } from '../model.js';
import type {
  ClaimOptions,
  CreateManyOptions,
  Filter,
  ListQuery,
  NewRecord,
  Patch,
  Repo,
  Row,
  Store,
  TransactionOptions,
  UpdateOptions,
} from '../port.js';
import { byKeys } from '../order.js';
import { bump, HIDDEN, rewrite, runTransaction } from './writes.js';
import { clashes, guarded, newRecord, sessionOf, staleOrGone, type Collection, type Ctx } from './context.js';
import { createMany, createOrAddMany, incrementMany, releaseMany, type RepoParts } from './many.js';
import { fromDocument, setOf, toDocument, WORDS_FIELD, wordsOf, type Doc } from './shape.js';
import { inspect } from './schema.js';
import { and, filterOf, leaseOver, sortOf, wordsFilter, type MongoFilter } from './translate.js';

class DocumentRepo<T extends object> implements Repo<T> {
  readonly #coll: Collection;
  constructor(
    private readonly ctx: Ctx,
    readonly model: ModelDef,
  ) {
    this.#coll = ctx.db.collection(model.table);
  }

  #o() {
    return sessionOf(this.ctx);
  }

  #row(doc: Doc | null): Row<T> | null {
    return doc ? (fromDocument(this.model, doc) as Row<T>) : null;
  }

  /** fn inside the caller's transaction, else inside a new one. */
  #atomic<R>(fn: (ctx: Ctx) => Promise<R>): Promise<R> {
    if (this.ctx.session) return fn(this.ctx);
    return runTransaction(this.ctx, fn);
  }

  #parts(): RepoParts {
    return {
      ctx: this.ctx,
      model: this.model,
      coll: this.#coll,
      atomic: (fn) => this.#atomic(fn),
      rewrite: (c, f, p, e) => rewrite(c, this.model, f, p, e),
    };
  }

  async create(data: NewRecord<T>): Promise<Row<T>> {
    const rec = newRecord(this.model, data as NewRecord<object>, new Date());
    const doc = toDocument(this.model, rec);
    return guarded(async () => {
      if (this.ctx.session && (await clashes(this.#coll, this.model, [doc], this.ctx.session)).size) throw new ApiError('api-112');
      await this.#coll.insertOne(doc, this.#o());
      return rec as Row<T>;
    });
  }

  async get(uid: string): Promise<Row<T> | null> {
    return guarded(async () => this.#row(await this.#coll.findOne({ _id: uid } as MongoFilter, { projection: HIDDEN, ...this.#o() })));
  }

  async findOne(filter: Filter): Promise<Row<T> | null> {
    return (await this.list({ filter, limit: 1 }))[0] ?? null;
  }

  async list(q: ListQuery = {}): Promise<Row<T>[]> {
    return this.#find(filterOf(this.model, q.filter), q);
  }

  async #find(filter: MongoFilter, q: ListQuery): Promise<Row<T>[]> {
    const sort = sortOf(this.model, q.sort);
    // MongoDB reads limit 0 as "no limit"; SQL's LIMIT 0 answers nothing.
    if (q.limit !== undefined && Math.trunc(q.limit) <= 0) return [];
    return guarded(async () => {
      let cursor = this.#coll.find(filter, { projection: HIDDEN, sort, ...this.#o() });
      if (q.offset) cursor = cursor.skip(Math.max(0, Math.trunc(q.offset)));
      if (q.limit !== undefined) cursor = cursor.limit(Math.trunc(q.limit));
      return (await cursor.toArray()).map((d) => this.#row(d)!);
    });
  }

  async count(filter?: Filter): Promise<number> {
    const f = filterOf(this.model, filter);
    return guarded(() => this.#coll.countDocuments(f, this.#o()));
  }

  async update(uid: string, patch: Patch<T>, opts: UpdateOptions = {}): Promise<Row<T>> {
    const target: MongoFilter = { _id: uid };
    if (opts.expectedVersion !== undefined) target.version = opts.expectedVersion;
    return guarded(async () => {
      if (touchesValues(this.model, patch)) {
        // In a transaction: a concurrent writer of the record makes it run again (withTransaction), never a lost write.
        const [row] = await this.#atomic((ctx) =>
          rewrite(ctx, this.model, target, patch as Record<string, unknown>, opts.expectedVersion !== undefined),
        );
        if (!row) throw await staleOrGone(this.#coll, uid, this.ctx);
        return row as Row<T>;
      }
      const { $inc, $set } = bump();
      const doc = await this.#coll.findOneAndUpdate(
        target,
        { $inc, $set: { ...setOf(this.model, patch as Record<string, unknown>), ...$set } },
        { returnDocument: 'after', projection: HIDDEN, ...this.#o() },
      );
      if (!doc) throw await staleOrGone(this.#coll, uid, this.ctx);
      return this.#row(doc)!;
    });
  }

  async delete(uid: string, opts: UpdateOptions = {}): Promise<boolean> {
    const target: MongoFilter = { _id: uid };
    if (opts.expectedVersion !== undefined) target.version = opts.expectedVersion;
    return guarded(async () => {
      if ((await this.#coll.deleteOne(target, this.#o())).deletedCount) return true;
      if (opts.expectedVersion === undefined) return false;
      const err = await staleOrGone(this.#coll, uid, this.ctx);
      if (err.code === 'api-107') return false;
      throw err;
    });
  }

  async updateMany(filter: Filter, patch: Patch<T>): Promise<number> {
    const f = filterOf(this.model, filter);
    return guarded(async () => {
      if (touchesValues(this.model, patch))
        return this.#atomic(async (ctx) => (await rewrite(ctx, this.model, f, patch as Record<string, unknown>, false, true)).length);
      const { $inc, $set } = bump();
      const r = await this.#coll.updateMany(
        f,
        { $inc, $set: { ...setOf(this.model, patch as Record<string, unknown>), ...$set } },
        this.#o(),
      );
      return r.matchedCount;
    });
  }

  async deleteMany(filter: Filter): Promise<number> {
    const f = filterOf(this.model, filter);
    return guarded(async () => (await this.#coll.deleteMany(f, this.#o())).deletedCount);
  }

  #fullText(): void {
    if (!this.model.fullText) throw new Error(`model ${this.model.name} has no full-text documents`);
  }

  async setText(uid: string, text: string): Promise<void> {
    this.#fullText();
    return guarded(
      async () => void (await this.#coll.updateOne({ _id: uid } as MongoFilter, { $set: { [WORDS_FIELD]: wordsOf(text) } }, this.#o())),
    );
  }

  async setTexts(docs: Map<string, string>): Promise<void> {
    this.#fullText();
    if (!docs.size) return;
    const ops = [...docs].map(([uid, text]) => ({
      updateOne: { filter: { _id: uid } as MongoFilter, update: { $set: { [WORDS_FIELD]: wordsOf(text) } } },
    }));
    return guarded(async () => {
      for (let i = 0; i < ops.length; i += 1000) await this.#coll.bulkWrite(ops.slice(i, i + 1000), { ordered: false, ...this.#o() });
    });
  }

  async search(text: string, q: ListQuery = {}): Promise<Row<T>[]> {
    this.#fullText();
    const words = wordsFilter(text);
    if (!words) return [];
    return this.#find(and(filterOf(this.model, q.filter), words), q);
  }

  async createOrAdd(data: NewRecord<T> & { uid: string }, adding: Array<keyof T & string>): Promise<void> {
    return this.createOrAddMany([data], adding);
  }

  async createOrAddMany(data: Array<NewRecord<T> & { uid: string }>, adding: Array<keyof T & string>): Promise<void> {
    if (this.model.valueIndexes?.length || this.model.fullText)
      throw new Error(`model ${this.model.name}: createOrAdd writes no value-index rows or documents`);
    return guarded(() => createOrAddMany(this.#parts(), data as Array<Record<string, unknown> & { uid: string }>, adding));
  }

  async createMany(data: NewRecord<T>[], opts: CreateManyOptions = {}): Promise<Row<T>[]> {
    if (!data.length) return [];
    const now = new Date();
    const recs = data.map((d) => newRecord(this.model, d as NewRecord<object>, now));
    return (await guarded(() => createMany(this.#parts(), recs, Boolean(opts.skipExisting)))) as Row<T>[];
  }

  async incrementMany(changes: Array<{ uid: string; deltas: Record<string, number> }>): Promise<Row<T>[]> {
    return (await guarded(() => incrementMany(this.#parts(), changes))) as Row<T>[];
  }

  async increment(target: string | Filter, deltas: Record<string, number>): Promise<Row<T> | null> {
    for (const [f, n] of Object.entries(deltas)) if (!Number.isFinite(n)) throw new Error(`increment ${f}: not a number`);
    const filter = typeof target === 'string' ? ({ _id: target } as MongoFilter) : filterOf(this.model, target);
    const { $inc, $set } = bump();
    return guarded(async () =>
      this.#row(
        await this.#coll.findOneAndUpdate(
          filter,
          { $inc: { ...deltas, ...$inc }, $set },
          // The record findOne(target) answers: the first by uid.
          { sort: [['_id', 1]], returnDocument: 'after', projection: HIDDEN, ...this.#o() },
        ),
      ),
    );
  }

  /** One findOneAndUpdate per record, in the claim's order: each takes one record no other claimer can take meanwhile. */
  async claim(filter: Filter, opts: ClaimOptions): Promise<Row<T>[]> {
    if (!this.model.lease) throw new Error(`model ${this.model.name} has no leases`);
    const now = new Date();
    const until = new Date(now.getTime() + opts.leaseMs);
    const keys = opts.sort ?? [{ field: 'createdAt', dir: 'asc' }];
    const sort = sortOf(this.model, keys);
    const chosen = and(filterOf(this.model, filter), leaseOver(now));
    const out: Row<T>[] = [];
    try {
      await guarded(async () => {
        while (out.length < Math.max(0, Math.trunc(opts.limit))) {
          const doc = await this.#coll.findOneAndUpdate(
            chosen,
            { $inc: { version: 1 }, $set: { claimedBy: opts.owner, leaseUntil: until, updatedAt: now } },
            { sort, returnDocument: 'after', projection: HIDDEN, ...this.#o() },
          );
          if (!doc) break;
          out.push(this.#row(doc)!);
        }
      });
    } catch (e) {
      // The records taken before the failure would wait out their lease unseen: give them back (best effort).
      if (!this.ctx.session)
        await this.releaseMany(
          out.map((r) => ({ uid: r.uid })),
          opts.owner,
        ).catch(() => undefined);
      throw e;
    }
    return out.sort(byKeys(keys));
  }

  async release(uid: string, owner: string, patch: Patch<T> = {}): Promise<boolean> {
    return this.releaseMany([{ uid, patch }], owner).then((r) => r.length > 0);
  }

  async releaseMany(items: Array<{ uid: string; patch?: Patch<T> }>, owner: string): Promise<string[]> {
    if (!this.model.lease) throw new Error(`model ${this.model.name} has no leases`);
    if (!items.length) return [];
    return guarded(() => releaseMany(this.#parts(), items as Array<{ uid: string; patch?: Record<string, unknown> }>, owner));
  }
}

export class DocumentStore implements Store {
  readonly kind = 'document' as const;
  readonly #repos = new Map<string, DocumentRepo<object>>();
  constructor(
    private readonly ctx: Ctx,
    /** Index differences synchronize found and left alone (svcmail doctor reports them). */
    readonly indexProblems: string[] = [],
    private readonly onClose: () => Promise<void> = async () => undefined,
  ) {}

  repo<T extends object>(model: ModelDef): Repo<T> {
    if (!this.ctx.models.has(model.name)) throw new Error(`model ${model.name} is not registered with the store`);
    let r = this.#repos.get(model.name);
    if (!r) this.#repos.set(model.name, (r = new DocumentRepo(this.ctx, model)));
    return r as unknown as Repo<T>;
  }

  models(): readonly ModelDef[] {
    return [...this.ctx.models.values()];
  }

  transaction<R>(fn: (tx: Store) => Promise<R>, opts: TransactionOptions = {}): Promise<R> {
    if (this.ctx.session) return fn(this);
    return runTransaction(this.ctx, (ctx) => fn(new DocumentStore(ctx, this.indexProblems)), opts);
  }

  /** The database (the GridFS blob store keeps blobs in it: document/gridfs.ts). */
  mongoDatabase(): Ctx['db'] {
    return this.ctx.db;
  }

  /** A GridFS bucket of the database. */
  gridfsBucket(name: string): ReturnType<Ctx['bucket']> {
    return this.ctx.bucket(name);
  }

  /** Collections and indexes the database lacks or has otherwise than the models declare (svcmail doctor). */
  schemaProblems(): Promise<string[]> {
    return guarded(() => inspect(this.ctx.db, this.models()));
  }

  async ping(): Promise<void> {
    await guarded(() => this.ctx.db.command({ ping: 1 }));
  }

  async serverVersion(): Promise<string> {
    const info = await guarded(() => this.ctx.db.admin().buildInfo());
    return `MongoDB ${String(info.version)}`;
  }

  close(): Promise<void> {
    return this.onClose();
  }
}
