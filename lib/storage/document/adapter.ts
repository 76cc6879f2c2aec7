import { ApiError } from '../../errors/index.js';
import type { ModelDef } from '../model.js';
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
import { mapError } from './errors.js';
import { clashes, guarded, newRecord, sessionOf, staleOrGone, type Collection, type Ctx } from './context.js';
import { createMany, createOrAddMany, incrementMany, releaseMany, type RepoParts } from './many.js';
import { fromDocument, setOf, toDocument, valuesOf, VALUES_FIELD, WORDS_FIELD, wordsOf, type Doc } from './shape.js';
import { inspect } from './schema.js';
import { and, filterOf, leaseOver, sortOf, wordsFilter, type MongoFilter } from './translate.js';

/** Fields a read never answers: the value-index and word arrays. */
const HIDDEN = { [VALUES_FIELD]: 0, [WORDS_FIELD]: 0 };

/** Every write raises version by one and moves updatedAt. */
export function bump(now = new Date()): { $inc: Record<string, number>; $set: Record<string, unknown> } {
  return { $inc: { version: 1 }, $set: { updatedAt: now } };
}

/** Attempts of a write that lost a race it wins when run again (a changed record, a racing first insert). */
export const RACE_ATTEMPTS = 5;

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

  /** Whether a patch changes a field some value index is derived from: such writes recompute the record's values. */
  #touchesValues(patch: object): boolean {
    return Boolean(this.model.valueIndexes?.some((vi) => vi.from.some((f) => f in patch) || (vi.scope !== undefined && vi.scope in patch)));
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
      if (this.#touchesValues(patch)) {
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
      if (this.#touchesValues(patch))
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

/**
 * The records matching `filter` with `patch` applied and their value-index values recomputed from
 * the record as patched: read, then written back only if unchanged meanwhile (its version), run
 * again for a record changed meanwhile unless `exact` (an expected version: then it is left out).
 * Answers the records written. `many`: every match, else the first.
 */
export async function rewrite(
  ctx: Ctx,
  model: ModelDef,
  filter: MongoFilter,
  patch: Record<string, unknown>,
  exact: boolean,
  many = false,
): Promise<Record<string, unknown>[]> {
  const coll = ctx.db.collection(model.table);
  const out: Record<string, unknown>[] = [];
  const set = setOf(model, patch);
  const docs = await coll.find(filter, { projection: HIDDEN, ...sessionOf(ctx), ...(many ? {} : { limit: 1 }) }).toArray();
  for (let doc of docs) {
    for (let attempt = 1; ; attempt++) {
      const merged = { ...fromDocument(model, doc), ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
      const { $inc, $set } = bump();
      const written = await coll.findOneAndUpdate(
        { _id: doc._id, version: doc.version } as MongoFilter,
        { $inc, $set: { ...set, [VALUES_FIELD]: valuesOf(model, merged), ...$set } },
        { returnDocument: 'after', projection: HIDDEN, ...sessionOf(ctx) },
      );
      if (written) {
        out.push(fromDocument(model, written));
        break;
      }
      const again =
        exact || attempt >= RACE_ATTEMPTS
          ? null
          : await coll.findOne(and(filter, { _id: doc._id }), { projection: HIDDEN, ...sessionOf(ctx) });
      if (!again) break;
      doc = again;
    }
  }
  return out;
}

/** The longest wait before a transaction is run again after a write conflict (ms; it doubles from 5 ms, with jitter). */
const RETRY_WAIT_MAX = 500;
/** How long a commit may wait for the majority (ms): a replica set without one fails the commit instead of hanging. */
const COMMIT_TIMEOUT = 30_000;

/**
 * Runs fn in a new transaction. withTransaction runs it again from the start after a transient error
 * (a write conflict with another transaction on the same record) — at once, so each run after the
 * first waits a random while that grows with the attempts: writers of one busy record (a folder's
 * counters) spread out instead of meeting again.
 */
export async function runTransaction<R>(ctx: Ctx, fn: (ctx: Ctx) => Promise<R>, opts: TransactionOptions = {}): Promise<R> {
  const session = ctx.client.startSession();
  let attempt = 0;
  try {
    return await session.withTransaction(
      async () => {
        if (attempt++ > 0) await new Promise((r) => setTimeout(r, Math.random() * Math.min(RETRY_WAIT_MAX, 5 * 2 ** attempt)));
        return fn({ ...ctx, session });
      },
      {
        readConcern: { level: 'snapshot' },
        // An asynchronous commit: acknowledged by the primary before it reaches the journal; the next
        // journaled write makes it durable (the journal is one sequence), as the port describes.
        writeConcern: opts.syncCommit === false ? { w: 1, j: false } : { w: 'majority', j: true },
        maxCommitTimeMS: COMMIT_TIMEOUT,
      },
    );
  } catch (e) {
    throw mapError(e);
  } finally {
    await session.endSession();
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
