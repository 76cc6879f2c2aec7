import type { DataSource } from 'typeorm';

// Kept read results of one model (select.ts): the rows a read answered, with the stamp (SQLite) or
// snapshot (PostgreSQL) they were read at, served again while the stamp is unchanged.

/**
 * PostgreSQL read results are kept with the snapshot they were read at: pg_current_snapshot() of
 * the reading statement itself (an InitPlan, evaluated once), so the rows and the stamp describe
 * the same instant. A snapshot names the last transaction to finish and every one still running;
 * while it reads the same, no transaction anywhere in the cluster has committed (or rolled back)
 * since, so the same query would answer the same rows. A commit by another process, or one that was
 * still running when the rows were read, changes it. Reads inside a transaction are never kept or
 * served. Only with JSON rows (the kept rows are the parsed arrays) and on PostgreSQL 13 or later.
 */
export const PG_SNAPSHOT = '(SELECT pg_current_snapshot()::text)';
export const PG_SNAPSHOT_SQL = 'SELECT pg_current_snapshot()::text';
/** Below this share of checks finding their result current, reads outside a request skip the kept results but one in CHECK_PROBE (keeping). */
const CHECK_WORTH = 0.3;
const CHECK_PROBE = 16;

/** Kept results per model (most recently used kept) and the largest result kept. */
const RESULT_CACHE = 256;
const RESULT_CACHE_MAX_ROWS = 1000;
/** All kept results of a model together hold at most this many rows (least recently used dropped first). */
const RESULT_CACHE_ROWS = 20_000;

const pgSnapshotSupport = new WeakMap<DataSource, Promise<boolean>>();
/** pg_current_snapshot() exists from PostgreSQL 13 on; asked once per data source. */
export function pgSnapshotsUsable(ds: DataSource): Promise<boolean> {
  let p = pgSnapshotSupport.get(ds);
  if (!p) {
    p = (ds.driver as unknown as { master: { query(q: { text: string; values: unknown[] }): Promise<{ rows: unknown[] }> } }).master
      .query({ text: "SELECT current_setting('server_version_num')::int >= 130000 AS ok", values: [] })
      .then(
        (r) => Boolean((r.rows[0] as { ok?: boolean } | undefined)?.ok),
        () => false,
      );
    pgSnapshotSupport.set(ds, p);
  }
  return p;
}

type PgMaster = { query(q: { text: string; values: unknown[]; rowMode?: 'array' }): Promise<{ rows: unknown[] }> };
interface PendingCheck {
  promise: Promise<string | undefined>;
  /** Handed to the driver: a caller arriving now could have sent its request after the snapshot was taken. */
  submitted: boolean;
}
const pgChecks = new WeakMap<DataSource, { pending: PendingCheck | null; sent: number }>();

/**
 * PostgreSQL: the current snapshot (PG_SNAPSHOT_SQL), read by a check handed to the driver after
 * this call. Callers in the same turn of the event loop share one check: it is submitted once the
 * I/O callbacks of that turn have run (setImmediate), so its snapshot is still taken after every one
 * of them asked — as good as a check of its own, for one round trip instead of one per caller (under
 * load, several requests reach their first read in the same turn). A caller arriving after the check
 * was submitted waits for the next one.
 */
export function pgCurrentSnapshot(ds: DataSource): Promise<string | undefined> {
  let state = pgChecks.get(ds);
  if (!state) pgChecks.set(ds, (state = { pending: null, sent: 0 }));
  if (state.pending && !state.pending.submitted) return state.pending.promise;
  const s = state;
  const pending: PendingCheck = { submitted: false, promise: undefined as unknown as Promise<string | undefined> };
  pending.promise = new Promise<string | undefined>((resolve, reject) => {
    setImmediate(() => {
      pending.submitted = true;
      s.sent++;
      if (s.pending === pending) s.pending = null;
      // No parameters, no name: pg sends it as a simple query (one message), which costs the daemon
      // less CPU than a named prepared statement (Bind, Execute, Sync; figures in bench/README.md).
      (ds.driver as unknown as { master: PgMaster }).master
        .query({ text: PG_SNAPSHOT_SQL, values: [], rowMode: 'array' })
        .then((r) => resolve((r.rows[0] as unknown[] | undefined)?.[0] as string | undefined), reject);
    });
  });
  s.pending = pending;
  return pending.promise;
}

/** Snapshot checks sent on this data source (diagnostics and tests). */
export const pgSnapshotChecks = (ds: DataSource): number => pgChecks.get(ds)?.sent ?? 0;

/**
 * The reads of one caller (an API request) since its last write: the stamp (SQLite) or snapshot
 * (PostgreSQL) its latest read was taken at. A kept result with that very stamp is what a read now
 * could answer as well — the stamp was taken after the caller asked, so nothing the caller could
 * have known of is missing from it — and is served without reading the stamp again (PostgreSQL: no
 * round trip). Any write through the caller's store forgets it (adapter.ts), so a caller always
 * reads its own writes.
 */
export interface ReadSession {
  stamp: string | null;
}

export interface KeptResult {
  stamp: string;
  /** The rows as the driver answered them: arrays of values in column order. */
  rows: unknown[][];
  mapped?: Record<string, unknown>[];
}

export class KeptResults {
  readonly #results = new Map<string, KeptResult>();
  /** Rows held by the kept results (bounded by RESULT_CACHE_ROWS). */
  #rows = 0;
  /** Share of recent snapshot checks that found the kept result current (a moving average). */
  #currentShare = 1;
  #skipped = 0;
  /** Reads answered from a kept result (diagnostics and tests). */
  served = 0;
  /** Reads outside a request that skipped the kept results while checks rarely found them current (keeping). */
  plainReads = 0;

  /** `flat`: the model has no JSON columns, so a shallow copy of a mapped row is a private copy. */
  constructor(private readonly flat: boolean) {}

  /** A kept result, whatever its stamp. */
  peek(key: string): KeptResult | undefined {
    return this.#results.get(key);
  }

  /** A kept result (now the most recently used), whatever its stamp. */
  touch(key: string): KeptResult | undefined {
    const hit = this.#results.get(key);
    if (hit) {
      this.#results.delete(key);
      this.#results.set(key, hit);
    }
    return hit;
  }

  keep(key: string, stamp: string, rows: unknown[][]): void {
    if (rows.length > RESULT_CACHE_MAX_ROWS) return;
    this.#drop(key);
    while (this.#results.size && (this.#results.size >= RESULT_CACHE || this.#rows + rows.length > RESULT_CACHE_ROWS))
      this.#drop(this.#results.keys().next().value!);
    this.#results.set(key, { stamp, rows });
    this.#rows += rows.length;
  }

  #drop(key: string): void {
    const old = this.#results.get(key);
    if (!old) return;
    this.#results.delete(key);
    this.#rows -= old.rows.length;
  }

  /** A kept result as records of the caller's own: mapped afresh, or (no JSON columns) copies of mapped rows. */
  serve(hit: KeptResult, map: (row: unknown[]) => Record<string, unknown>): Record<string, unknown>[] {
    this.served++;
    if (!this.flat) return hit.rows.map(map);
    hit.mapped ??= hit.rows.map(map);
    return hit.mapped.map((r) => ({ ...r }));
  }

  /**
   * Whether a read outside a request goes through the kept results (SQLite: reads the stamp, keeps
   * its rows; PostgreSQL: a check when one is kept, else a read that keeps its rows with their
   * snapshot). Always, unless checks have rarely found a result current lately (steady writes):
   * then one read in CHECK_PROBE does, so the kept results come back when the writes stop, and the
   * others are plain reads, with no stamp to read and nothing to keep (a process that mostly writes,
   * such as the worker filing mail, pays nothing for them). A request's reads always go through them.
   */
  keeping(): boolean {
    if (this.#currentShare >= CHECK_WORTH || ++this.#skipped % CHECK_PROBE === 0) return true;
    this.plainReads++;
    return false;
  }

  /** What a check of a kept result's stamp or snapshot found. */
  checked(current: boolean): void {
    this.#currentShare = this.#currentShare * 0.9 + (current ? 0.1 : 0);
  }
}
