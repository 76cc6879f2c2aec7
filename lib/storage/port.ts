import type { ModelDef, RecordBase } from './model.js';

export type Scalar = string | number | boolean | Date | null;

/** Field conditions. A bare value means equality; null means IS NULL. */
export type Condition =
  | Scalar
  | { $in: Scalar[] }
  | { $nin: Scalar[] }
  | { $ne: Scalar }
  | { $gt?: Scalar; $gte?: Scalar; $lt?: Scalar; $lte?: Scalar }
  /** Value indexes only (ModelDef.valueIndexes): one of the record's values equals / starts with it. */
  | { $has: string }
  | { $prefix: string };

export type Filter = Record<string, Condition>;

export interface SortKey {
  field: string;
  dir: 'asc' | 'desc';
}

export interface ListQuery {
  filter?: Filter;
  sort?: SortKey[];
  limit?: number;
  offset?: number;
}

export interface UpdateOptions {
  /** Conditional write: the stored version must equal this, else ApiError api-108. */
  expectedVersion?: number;
}

export interface CreateManyOptions {
  /** Leave out a record a unique key refuses (it exists) instead of refusing them all. */
  skipExisting?: boolean;
}

export interface ClaimOptions {
  owner: string;
  leaseMs: number;
  limit: number;
  sort?: SortKey[];
}

export type Row<T> = T & RecordBase;
export type NewRecord<T> = Omit<T, keyof RecordBase> & { uid?: string };
export type Patch<T> = Partial<Omit<T, keyof RecordBase>>;

/**
 * One collection of records. Every write bumps `version` and `updatedAt`. Every method is safe
 * under concurrency from many processes: version checks and claims are single conditional writes.
 */
export interface Repo<T extends object> {
  readonly model: ModelDef;
  create(data: NewRecord<T>): Promise<Row<T>>;
  get(uid: string): Promise<Row<T> | null>;
  findOne(filter: Filter): Promise<Row<T> | null>;
  list(query?: ListQuery): Promise<Row<T>[]>;
  count(filter?: Filter): Promise<number>;
  /** Throws api-107 when absent, api-108 when expectedVersion is stale. */
  update(uid: string, patch: Patch<T>, opts?: UpdateOptions): Promise<Row<T>>;
  /** Returns false when absent; throws api-108 when expectedVersion is stale. */
  delete(uid: string, opts?: UpdateOptions): Promise<boolean>;
  updateMany(filter: Filter, patch: Patch<T>): Promise<number>;
  deleteMany(filter: Filter): Promise<number>;
  /**
   * Creates the record, or, when one with its uid exists, adds data's values of the `adding` fields
   * to the stored ones (counters): one atomic write either way. Not for models with value indexes
   * or full-text documents. On a model with another unique key, first creations of one uid racing
   * each other inside transactions can fail (PostgreSQL: deadlock, or api-112 from that key) and
   * the caller's transaction with them; outside a transaction they are run again and add up.
   */
  createOrAdd(data: NewRecord<T> & { uid: string }, adding: Array<keyof T & string>): Promise<void>;
  /** createOrAdd of several records (several of one uid add up), together: on PostgreSQL one statement. */
  createOrAddMany(data: Array<NewRecord<T> & { uid: string }>, adding: Array<keyof T & string>): Promise<void>;
  /**
   * Creates every record or none (a unique clash: api-112, nothing written) and answers them; on
   * PostgreSQL one statement (with the records' value-index rows) per set of fields given, up to
   * 500 records each. skipExisting: a record a unique key refuses is left out instead, and only
   * the records written are answered.
   */
  createMany(data: NewRecord<T>[], opts?: CreateManyOptions): Promise<Row<T>[]>;
  /**
   * increment of several records by uid (several of one uid add up), together: on PostgreSQL one
   * statement, the rows locked in uid order. Answers the rows as written, in uid order; an absent
   * uid answers none.
   */
  incrementMany(changes: Array<{ uid: string; deltas: Record<string, number> }>): Promise<Row<T>[]>;
  /**
   * Atomic numeric deltas (counters): field = field + delta, in one statement, of the record with
   * this uid or of the one findOne(filter) would answer (found and raised together). Null when absent.
   */
  increment(target: string | Filter, deltas: Record<string, number>): Promise<Row<T> | null>;
  /** Lease models: claim up to `limit` unleased (or lease-expired) records matching the filter. */
  claim(filter: Filter, opts: ClaimOptions): Promise<Row<T>[]>;
  /** Lease models: drop the lease if `owner` still holds it, applying `patch` in the same write. */
  release(uid: string, owner: string, patch?: Patch<T>): Promise<boolean>;
  /** release of several records, each with its own patch, together (PostgreSQL: one statement per set of fields patched); answers the uids released. */
  releaseMany(items: Array<{ uid: string; patch?: Patch<T> }>, owner: string): Promise<string[]>;
  /** Full-text models: (re)places the text document of a record; deleting the record drops it. */
  setText(uid: string, text: string): Promise<void>;
  /** Full-text models: setText for each uid → text (on PostgreSQL in one statement). */
  setTexts(docs: Map<string, string>): Promise<void>;
  /**
   * Full-text models: records whose document holds every word of `text` (each word also as a
   * prefix, case-insensitive), narrowed and ordered by the query like list(). No word: no records.
   */
  search(text: string, query?: ListQuery): Promise<Row<T>[]>;
}

export interface TransactionOptions {
  /**
   * false: the commit is not waited for on its way to disk (PostgreSQL `synchronous_commit = off`
   * for this transaction; SQLite: no WAL fsync awaited). Its changes are visible at once; they are
   * durable once any later synchronous commit of the same datastore is (the log is one sequence),
   * and a crash of the database before then loses them. Only for work that is done again when it
   * is lost: the scan round's filings, made durable by the commit that releases their entries.
   */
  syncCommit?: boolean;
}

export interface Store {
  readonly kind: 'sqlite' | 'postgres' | 'document';
  repo<T extends object>(model: ModelDef): Repo<T>;
  /** The models the store was opened with. */
  models(): readonly ModelDef[];
  /** Runs fn with a store whose writes commit or roll back together. */
  transaction<R>(fn: (tx: Store) => Promise<R>, opts?: TransactionOptions): Promise<R>;
  /**
   * A view of this store for one caller (an API request) whose reads may be answered at one
   * consistency point taken after the caller asked, until the caller writes (the SQL adapter's kept
   * results). Adapters without one leave it out; callers use the store itself then.
   */
  session?(): Store;
  /** Throws when the datastore does not answer (readiness). */
  ping(): Promise<void>;
  /** The datastore server's version (diagnostics); adapters that cannot tell leave it out. */
  serverVersion?(): Promise<string>;
  close(): Promise<void>;
}
