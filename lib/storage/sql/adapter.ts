import { DataSource, QueryFailedError, type EntityManager, type ObjectLiteral } from 'typeorm';
import { v7 as uuidv7 } from 'uuid';
import { ApiError, notFound } from '../../errors/index.js';
import { touchesValues, withDefaults, type ModelDef } from '../model.js';
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
import { type SqlDialect } from './entities.js';
import { dropText, matchClause, setText, setTexts } from './fulltext.js';
import { queryWords } from '../terms.js';
import { schemaGaps, type SchemaGap } from './schema-gaps.js';
import { groupTransaction } from './group-commit.js';
import { pgSnapshotChecks, type ReadSession } from './kept.js';
import { SelectRunner } from './select.js';
import { BATCH as VALUE_BATCH, dropValues, hasValueIndexes, termsOf, termsTable, writeValues } from './value-index.js';
import { inserterOf } from './insert.js';
import { createMany, createOrAddMany, incrementMany, releaseMany, type RepoParts } from './many.js';
import { writerOf, type UpdateSpec, type Writer } from './update.js';
import { WalSync } from './wal-sync.js';
import { Checkpointer } from './checkpointer.js';
import { Mutex } from './sqlite-lock.js';
import { asyncCommitTransaction, inTransaction } from './transaction.js';

// SQLITE_BUSY: another process held the write lock past busy_timeout (5 s) — the datastore is not answering.
const CONNECTION_CODES = new Set([
  'SQLITE_BUSY',
  'ECONNREFUSED',
  'ECONNRESET',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EPIPE',
  '57P01',
  '57P03',
  '08006',
  '08001',
  '08003',
]);

/** Translate driver failures into catalogue errors; other errors pass through untouched. */
export function mapError(e: unknown): unknown {
  if (e instanceof ApiError) return e;
  const driverError = e instanceof QueryFailedError ? (e.driverError as { code?: string }) : (e as { code?: string });
  const code = driverError?.code ?? '';
  if (code === '23505' || code.startsWith('SQLITE_CONSTRAINT_UNIQUE') || code === 'SQLITE_CONSTRAINT_PRIMARYKEY')
    return new ApiError('api-112');
  if (
    CONNECTION_CODES.has(code) ||
    /Connection terminated|connect ECONNREFUSED|Cannot use a pool after calling end|not initialized|connection is not open/i.test(
      String((e as Error)?.message),
    )
  ) {
    return new ApiError('api-113', 'The datastore does not answer');
  }
  return e;
}

interface Ctx {
  ds: DataSource;
  dialect: SqlDialect;
  models: Map<string, ModelDef>;
  lock: Mutex | null;
  /** SQLite file databases: makes commits durable off the main thread (wal-sync.ts); null inside a transaction and on PostgreSQL. */
  durable: WalSync | null;
  /** SQLite file databases: WAL checkpoints on a thread of their own (checkpointer.ts); null inside a transaction and on PostgreSQL. */
  checkpoints: Checkpointer | null;
  manager: EntityManager;
  /** One read-path runner (and prepared-statement cache) per model, shared with transactions. */
  selects: Map<string, SelectRunner>;
  /** PostgreSQL reads as named prepared statements (datastores:sql:prepared_statements). */
  prepared: boolean;
  /** A caller's reads since its last write (SqlStore.session); none on the shared store. */
  session?: ReadSession;
}

class SqlRepo<T extends object> implements Repo<T> {
  readonly #sel: SelectRunner;
  readonly #values: boolean;
  constructor(
    private readonly ctx: Ctx,
    readonly model: ModelDef,
  ) {
    this.#values = hasValueIndexes(model);
    let sel = ctx.selects.get(model.name);
    if (!sel) ctx.selects.set(model.name, (sel = new SelectRunner(ctx.ds, ctx.dialect, model, ctx.prepared)));
    this.#sel = sel;
  }

  #byUid(uid: string): Promise<Row<T> | null> {
    return this.#sel.get(this.ctx.manager, uid) as Promise<Row<T> | null>;
  }

  #run<R>(fn: () => Promise<R>): Promise<R> {
    const guarded = () =>
      fn().catch((e: unknown) => {
        throw mapError(e);
      });
    return this.ctx.lock ? this.ctx.lock.run(guarded) : guarded();
  }

  /** A write outside a transaction: committed under the lock, then durable (the lock is free meanwhile). */
  async #write<R>(fn: () => Promise<R>): Promise<R> {
    // The caller's next read takes a new stamp: it must see this write (and whatever else committed).
    if (this.ctx.session) this.ctx.session.stamp = null;
    const r = await this.#run(fn).finally(() => {
      if (this.ctx.session) this.ctx.session.stamp = null;
    });
    this.ctx.checkpoints?.committed();
    await this.ctx.durable?.sync();
    return r;
  }

  /**
   * Runs fn in the caller's transaction, else in a new one: a record and its value-index rows
   * commit together. (Inside #run: on SQLite the lock is already held.)
   */
  #atomic<R>(fn: (m: EntityManager) => Promise<R>): Promise<R> {
    if (this.ctx.manager.queryRunner) return fn(this.ctx.manager);
    return inTransaction(this.ctx.ds, this.ctx.dialect, fn);
  }

  create(data: NewRecord<T>): Promise<Row<T>> {
    const rec = this.#newRecord(data, new Date());
    if (this.#values && this.ctx.dialect === 'postgres') {
      const terms = termsOf(this.model, rec);
      if (terms.length && terms.length <= VALUE_BATCH) {
        return this.#write(async () => {
          const written = await inserterOf(this.ctx.ds, this.ctx.dialect, this.model, this.#sel).insertWithTerms(
            this.ctx.manager,
            rec,
            this.#skipConflict(this.ctx.manager),
            termsTable(this.model),
            terms,
          );
          if (written === 0) throw new ApiError('api-112');
          return rec as Row<T>;
        });
      }
    }
    if (this.#values) {
      return this.#write(() =>
        this.#atomic(async (m) => {
          await this.#insert(m, rec);
          await writeValues(m, this.ctx.dialect, this.model, [rec], true);
          return rec as Row<T>;
        }),
      );
    }
    return this.#write(async () => {
      await this.#insert(this.ctx.manager, rec);
      return rec as Row<T>;
    });
  }

  /**
   * Inside a PostgreSQL transaction a failed statement aborts the transaction, so a unique violation
   * its caller handles (api-112: addBlobRef's "created meanwhile" when two copies of one message file
   * at once) would fail everything after it. There the insert skips a conflicting row (ON CONFLICT DO
   * NOTHING) and answers api-112 itself when no row was written; the transaction stays usable without
   * a savepoint's two extra round trips. bench/soak.ts exercises this: an aborted transaction there
   * shows as filing retried after mail:ingest:retry_backoff_seconds.
   */
  async #insert(m: EntityManager, rec: ObjectLiteral): Promise<void> {
    if ((await inserterOf(this.ctx.ds, this.ctx.dialect, this.model, this.#sel).insert(m, rec, this.#skipConflict(m))) === 0)
      throw new ApiError('api-112');
  }

  #skipConflict(m: EntityManager): boolean {
    return this.ctx.dialect === 'postgres' && Boolean(m.queryRunner?.isTransactionActive);
  }

  #writer(): Writer {
    return writerOf(this.ctx.ds, this.ctx.dialect, this.model, this.#sel);
  }

  /**
   * An UPDATE of one record that answers the record as written, or null when the UPDATE matched
   * nothing: one statement (UPDATE … RETURNING) on both engines.
   */
  async #updateReturning(spec: UpdateSpec, m: EntityManager = this.ctx.manager): Promise<Row<T> | null> {
    return ((await this.#writer().updateReturning(m, spec))[0] ?? null) as Row<T> | null;
  }

  get(uid: string): Promise<Row<T> | null> {
    return this.#run(() => this.#sel.get(this.ctx.manager, uid, this.ctx.session) as Promise<Row<T> | null>);
  }

  async findOne(filter: Filter): Promise<Row<T> | null> {
    const rows = await this.list({ filter, limit: 1 });
    return rows[0] ?? null;
  }

  list(q: ListQuery = {}): Promise<Row<T>[]> {
    return this.#run(async () => (await this.#sel.list(this.ctx.manager, q, undefined, this.ctx.session)) as Row<T>[]);
  }

  count(filter?: Filter): Promise<number> {
    return this.#run(() => this.#sel.count(this.ctx.manager, filter));
  }

  async update(uid: string, patch: Patch<T>, opts: UpdateOptions = {}): Promise<Row<T>> {
    return this.#write(async () => {
      const filter: Filter = { uid };
      if (opts.expectedVersion !== undefined) filter.version = opts.expectedVersion;
      const affected = await this.#updateWhere(filter, patch);
      if (affected === 0) {
        const exists = await this.#byUid(uid);
        if (!exists) throw notFound();
        throw new ApiError('api-108', `Version conflict: the record is at version ${exists.version}`);
      }
      return (await this.#byUid(uid))!;
    });
  }

  async #updateWhere(filter: Filter, patch: Patch<T>, extra: ObjectLiteral = {}): Promise<number> {
    const set: ObjectLiteral = { ...patch, ...extra };
    if (!this.#values || !touchesValues(this.model, set)) return this.#writer().update(this.ctx.manager, { set, where: [filter] });
    // The patch changes fields a value index derives from: update exactly the records chosen here and
    // rewrite their values from the rows as stored, in one transaction.
    return this.#atomic(async (m) => {
      const uids = await this.#sel.uids(m, filter);
      let affected = 0;
      for (let i = 0; i < uids.length; i += 500) {
        const chunk = uids.slice(i, i + 500);
        affected += await this.#writer().update(m, { set, where: [filter, { uid: { $in: chunk } }] });
        const rows = await this.#sel.list(m, { filter: { uid: { $in: chunk } } });
        await writeValues(m, this.ctx.dialect, this.model, rows);
      }
      return affected;
    });
  }

  delete(uid: string, opts: UpdateOptions = {}): Promise<boolean> {
    return this.#write(async () => {
      const filter: Filter = { uid };
      if (opts.expectedVersion !== undefined) filter.version = opts.expectedVersion;
      const sides = this.model.fullText || this.#values;
      const gone = await (sides ? this.#atomic.bind(this) : (fn: (m: EntityManager) => Promise<boolean>) => fn(this.ctx.manager))(
        async (m) => {
          if (!(await this.#writer().delete(m, [filter]))) return false;
          if (this.model.fullText) await dropText(m, this.ctx.dialect, this.model, [uid]);
          if (this.#values) await dropValues(m, this.ctx.dialect, this.model, [uid]);
          return true;
        },
      );
      if (gone) return true;
      if (opts.expectedVersion === undefined) return false;
      const exists = await this.#byUid(uid);
      if (!exists) return false;
      throw new ApiError('api-108', `Version conflict: the record is at version ${exists.version}`);
    });
  }

  updateMany(filter: Filter, patch: Patch<T>): Promise<number> {
    return this.#write(() => this.#updateWhere(filter, patch));
  }

  deleteMany(filter: Filter): Promise<number> {
    if (!this.model.fullText && !this.#values) {
      return this.#write(() => this.#writer().delete(this.ctx.manager, [filter]));
    }
    // Side documents and values go with their records, in the same transaction.
    return this.#write(() =>
      this.#atomic(async (m) => {
        const doomed = await this.#sel.uids(m, filter);
        let n = 0;
        for (let i = 0; i < doomed.length; i += 500) {
          const chunk = doomed.slice(i, i + 500);
          n += await this.#writer().delete(m, [filter, { uid: { $in: chunk } }]);
          if (this.model.fullText) await dropText(m, this.ctx.dialect, this.model, chunk);
          if (this.#values) await dropValues(m, this.ctx.dialect, this.model, chunk);
        }
        return n;
      }),
    );
  }

  setTexts(docs: Map<string, string>): Promise<void> {
    if (!this.model.fullText) throw new Error(`model ${this.model.name} has no full-text documents`);
    if (!docs.size) return Promise.resolve();
    return this.#write(() => setTexts(this.ctx.manager, this.ctx.dialect, this.model, docs));
  }

  setText(uid: string, text: string): Promise<void> {
    if (!this.model.fullText) throw new Error(`model ${this.model.name} has no full-text documents`);
    return this.#write(() => setText(this.ctx.manager, this.ctx.dialect, this.model, uid, text));
  }

  async search(text: string, q: ListQuery = {}): Promise<Row<T>[]> {
    if (!this.model.fullText) throw new Error(`model ${this.model.name} has no full-text documents`);
    const words = queryWords(text);
    if (!words.length) return [];
    return this.#run(
      async () =>
        (await this.#sel.list(
          this.ctx.manager,
          q,
          (ph) => matchClause(this.ctx.dialect, this.model, words, ph),
          this.ctx.session,
        )) as Row<T>[],
    );
  }

  createOrAdd(data: NewRecord<T> & { uid: string }, adding: string[]): Promise<void> {
    if (this.#values || this.model.fullText)
      throw new Error(`model ${this.model.name}: createOrAdd writes no value-index rows or documents`);
    const rec = this.#newRecord(data, new Date());
    // PostgreSQL: the several-record statement, which locks a row that is there before adding to it
    // (RowsInserter.createOrAdd) and runs again a first insert that lost a race (retryRaces).
    if (this.ctx.dialect === 'postgres') return createOrAddMany(this.#parts(), [rec], adding);
    return this.#write(async () => {
      await inserterOf(this.ctx.ds, this.ctx.dialect, this.model, this.#sel).createOrAdd(this.ctx.manager, rec, adding);
    });
  }

  #newRecord(data: NewRecord<T>, now: Date): ObjectLiteral {
    const rec = {
      ...withDefaults(this.model, data as Record<string, unknown>),
      uid: data.uid ?? uuidv7(),
      version: 1,
      createdAt: now,
      updatedAt: now,
    } as ObjectLiteral;
    if (this.model.lease) {
      rec.claimedBy ??= null;
      rec.leaseUntil ??= null;
    }
    return rec;
  }

  /** What the several-record writes (many.ts) need of this repo. */
  #parts(): RepoParts {
    return {
      ds: this.ctx.ds,
      dialect: this.ctx.dialect,
      model: this.model,
      sel: this.#sel,
      values: this.#values,
      manager: this.ctx.manager,
      write: (fn) => this.#write(fn),
      atomic: (fn) => this.#atomic(fn),
      skipConflict: (m) => this.#skipConflict(m),
      writer: () => this.#writer(),
    };
  }

  async createMany(data: NewRecord<T>[], opts: CreateManyOptions = {}): Promise<Row<T>[]> {
    const now = new Date();
    const recs = data.map((d) => this.#newRecord(d, now));
    return recs.length ? ((await createMany(this.#parts(), recs, Boolean(opts.skipExisting))) as Row<T>[]) : [];
  }

  async createOrAddMany(data: Array<NewRecord<T> & { uid: string }>, adding: string[]): Promise<void> {
    if (this.#values || this.model.fullText)
      throw new Error(`model ${this.model.name}: createOrAdd writes no value-index rows or documents`);
    const now = new Date();
    // Several of one uid add up (one statement may write a row once); written in uid order.
    const merged = new Map<string, ObjectLiteral>();
    for (const d of data) {
      const had = merged.get(d.uid);
      if (!had) merged.set(d.uid, { ...this.#newRecord(d, now), uid: d.uid });
      else for (const f of adding) had[f] = Number(had[f] ?? 0) + Number((d as Record<string, unknown>)[f] ?? 0);
    }
    if (merged.size)
      await createOrAddMany(
        this.#parts(),
        [...merged.keys()].sort().map((uid) => merged.get(uid)!),
        adding,
      );
  }

  async incrementMany(changes: Array<{ uid: string; deltas: Record<string, number> }>): Promise<Row<T>[]> {
    const merged = new Map<string, Record<string, number>>();
    for (const c of changes) {
      const d = merged.get(c.uid) ?? {};
      for (const [f, n] of Object.entries(c.deltas)) d[f] = (d[f] ?? 0) + n;
      merged.set(c.uid, d);
    }
    if (!merged.size) return [];
    return (await incrementMany(
      this.#parts(),
      [...merged.keys()].sort().map((uid) => ({ uid, deltas: merged.get(uid)! })),
    )) as Row<T>[];
  }

  increment(target: string | Filter, deltas: Record<string, number>): Promise<Row<T> | null> {
    if (typeof target === 'string')
      return this.#write(() => this.#updateReturning({ set: {}, increments: deltas, where: [{ uid: target }] }));
    // The record findOne(target) answers (the first by uid), found and raised in the one statement.
    const table = this.#sel.q(this.model.table);
    return this.#write(() =>
      this.#updateReturning({
        set: {},
        increments: deltas,
        where: [],
        raw: (_ph, params) => `"uid" = (SELECT "uid" FROM ${table}${this.#sel.where(target, params)} ORDER BY "uid" ASC LIMIT 1)`,
      }),
    );
  }

  /**
   * One statement on both engines: the rows are chosen by a subquery (filter, lease over, order,
   * limit) and leased by the UPDATE around it. PostgreSQL locks the chosen rows FOR UPDATE SKIP
   * LOCKED, so concurrent claimers take different rows without waiting for each other, and a row
   * another claimer leased meanwhile is checked again and left out; SQLite's write lock makes the
   * statement the only writer.
   */
  async claim(filter: Filter, opts: ClaimOptions): Promise<Row<T>[]> {
    if (!this.model.lease) throw new Error(`model ${this.model.name} has no leases`);
    const now = new Date();
    const until = new Date(now.getTime() + opts.leaseMs);
    const sort = opts.sort ?? [{ field: 'createdAt', dir: 'asc' }];
    const table = this.#sel.q(this.model.table);
    const writer = this.#writer();
    const leaseOver = (ph: (v: unknown) => string) =>
      `(${table}."leaseUntil" IS NULL OR ${table}."leaseUntil" < ${ph(writer.value('leaseUntil', now))})`;
    // On SQLite inside a transaction begun IMMEDIATE, so waiting for another process's write lock
    // does not stall the event loop (sqlite-lock.ts); an autocommit statement would wait in SQLite's busy handler.
    const take = (m: EntityManager) =>
      writer.updateReturning(m, {
        set: { claimedBy: opts.owner, leaseUntil: until },
        where: [],
        raw: (ph, params) => {
          const chosen = this.#sel.where(filter, params);
          const cond = `${chosen ? `${chosen} AND` : ' WHERE'} ${leaseOver(ph)}`;
          const lock = this.ctx.dialect === 'postgres' ? ' FOR UPDATE SKIP LOCKED' : '';
          return `"uid" IN (SELECT "uid" FROM ${table}${cond}${this.#sel.orderBy(sort)} LIMIT ${Math.max(0, Math.trunc(opts.limit))}${lock}) AND ${leaseOver(ph)}`;
        },
      });
    const rows = await this.#write(() => (this.ctx.dialect === 'sqlite' ? this.#atomic(take) : take(this.ctx.manager)));
    return (rows as Row<T>[]).sort(byKeys(sort));
  }

  release(uid: string, owner: string, patch: Patch<T> = {}): Promise<boolean> {
    return this.#write(async () => (await this.#updateWhere({ uid, claimedBy: owner }, patch, { claimedBy: null, leaseUntil: null })) > 0);
  }

  async releaseMany(items: Array<{ uid: string; patch?: Patch<T> }>, owner: string): Promise<string[]> {
    if (!this.model.lease) throw new Error(`model ${this.model.name} has no leases`);
    return items.length
      ? releaseMany(
          this.#parts(),
          items.map((i) => ({ uid: i.uid, patch: (i.patch ?? {}) as ObjectLiteral })),
          owner,
        )
      : [];
  }
}

export class SqlStore implements Store {
  readonly kind: SqlDialect;
  readonly #repos = new Map<string, SqlRepo<object>>();
  constructor(private readonly ctx: Ctx) {
    this.kind = ctx.dialect;
  }

  repo<T extends object>(model: ModelDef): Repo<T> {
    if (!this.ctx.models.has(model.name)) throw new Error(`model ${model.name} is not registered with the store`);
    let r = this.#repos.get(model.name);
    if (!r) {
      r = new SqlRepo(this.ctx, model);
      this.#repos.set(model.name, r);
    }
    return r as unknown as Repo<T>;
  }

  models(): readonly ModelDef[] {
    return [...this.ctx.models.values()];
  }

  /**
   * A view of this store for one caller (an API request): its reads of kept results share one stamp
   * until it writes (kept.ts, ReadSession), so a request reads the stamp or snapshot once, not
   * once per read. Same connections, lock and transactions as this store.
   */
  session(): Store {
    return new SqlStore({ ...this.ctx, session: { stamp: null } });
  }

  transaction<R>(fn: (tx: Store) => Promise<R>, opts: TransactionOptions = {}): Promise<R> {
    const session = this.ctx.session;
    if (session) session.stamp = null;
    const member = (manager: EntityManager) => fn(new SqlStore({ ...this.ctx, manager, lock: null, durable: null, checkpoints: null }));
    const settle = (p: Promise<R>) =>
      p
        .catch((e: unknown) => {
          throw mapError(e);
        })
        .finally(() => {
          if (session) session.stamp = null;
        });
    const sync = opts.syncCommit !== false;
    if (!this.ctx.lock)
      return settle(
        sync || this.ctx.dialect !== 'postgres'
          ? inTransaction(this.ctx.ds, this.ctx.dialect, member)
          : asyncCommitTransaction(this.ctx.ds, member),
      );
    // SQLite: committed under the lock together with the transactions waiting beside it (group-commit.ts);
    // made durable after it (the next transaction need not wait for the fsync; one that need not be durable yet does not wait at all).
    return settle(groupTransaction(this.ctx.ds, this.ctx.lock, member)).then(async (r) => {
      this.ctx.checkpoints?.committed();
      if (sync) await this.ctx.durable?.sync();
      return r;
    });
  }

  /** SQLite file databases: the WAL syncer (wal-sync.ts); null elsewhere. */
  get walSync(): WalSync | null {
    return this.ctx.durable;
  }

  async ping(): Promise<void> {
    try {
      await (this.ctx.lock ? this.ctx.lock.run(() => this.ctx.ds.query('SELECT 1')) : this.ctx.ds.query('SELECT 1'));
    } catch (e) {
      throw mapError(e);
    }
  }

  async serverVersion(): Promise<string> {
    const sql = this.kind === 'postgres' ? "SELECT current_setting('server_version') AS v" : 'SELECT sqlite_version() AS v';
    const run = () => this.ctx.ds.query(sql) as Promise<Array<{ v: string }>>;
    const rows = await (this.ctx.lock ? this.ctx.lock.run(run) : run());
    return `${this.kind === 'postgres' ? 'PostgreSQL' : 'SQLite'} ${rows[0]?.v ?? 'unknown'}`;
  }

  /** Tables and columns the models declare but the database lacks (svcmail doctor: schema in sync). */
  schemaGaps(): Promise<SchemaGap[]> {
    return schemaGaps(this.ctx.ds, this.kind, (fn) => (this.ctx.lock ? this.ctx.lock.run(fn) : fn())).catch((e: unknown) => {
      throw mapError(e);
    });
  }

  /** Reads answered from kept results since the store opened (select.ts: SQLite stamps, PostgreSQL snapshots). */
  get readsServedKept(): number {
    let n = 0;
    for (const sel of this.ctx.selects.values()) n += sel.servedKept;
    return n;
  }

  /** Reads outside a request that skipped the kept results while writes kept moving the stamp (kept.ts, KeptResults.keeping). */
  get plainReads(): number {
    let n = 0;
    for (const sel of this.ctx.selects.values()) n += sel.plainReads;
    return n;
  }

  /** PostgreSQL: snapshot checks sent so far (kept.ts, pgCurrentSnapshot: one per turn of the event loop that needs one); 0 on SQLite. */
  get snapshotChecks(): number {
    return pgSnapshotChecks(this.ctx.ds);
  }

  /** SQLite file databases: the WAL checkpointer (checkpointer.ts); null elsewhere. */
  get checkpointer(): Checkpointer | null {
    return this.ctx.checkpoints;
  }

  async close(): Promise<void> {
    await this.ctx.checkpoints?.close();
    if (this.ctx.ds.isInitialized) await this.ctx.ds.destroy();
    await this.ctx.durable?.close();
  }
}
