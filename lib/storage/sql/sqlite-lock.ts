// SQLite is one file written by several processes (the api daemon queues mail while the worker
// files it) through one connection per process: in-process work is serialised, and the
// cross-process write lock is taken without blocking the event loop.

/** Serialises SQLite work on its single connection so a transaction never sees a stranger's write. */
export class Mutex {
  #tail: Promise<unknown> = Promise.resolve();
  run<R>(fn: () => Promise<R>): Promise<R> {
    const next = this.#tail.then(fn, fn);
    this.#tail = next.catch(() => undefined);
    return next;
  }
}

/** The better-sqlite3 connection under TypeORM's driver (only what beginImmediate uses). */
export interface SqliteHandle {
  prepare(sql: string): { get(): unknown; run(): unknown };
}

export const BUSY_TIMEOUT_MS = 5000;
const lockStatements = new WeakMap<SqliteHandle, { begin: { run(): unknown }; noWait: { get(): unknown }; wait: { get(): unknown } }>();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const isBusy = (e: unknown) => /^SQLITE_BUSY/.test((e as { code?: string })?.code ?? '');

/**
 * BEGIN IMMEDIATE without stalling the event loop. SQLite's busy handler waits for another
 * process's write lock by sleeping in the calling thread — with better-sqlite3 the daemon's only
 * thread, so while the worker files mail the api daemon could neither read a request nor answer
 * one (bench/README.md, ingest). The lock is tried without the busy handler and, while another
 * process holds it, tried again after a timer, up to busy_timeout; then it fails with SQLITE_BUSY,
 * as SQLite's own busy handler would (api-113).
 */
export async function beginImmediate(driver: { databaseConnection: SqliteHandle }): Promise<void> {
  const db = driver.databaseConnection;
  let st = lockStatements.get(db);
  if (!st)
    lockStatements.set(
      db,
      (st = {
        begin: db.prepare('BEGIN IMMEDIATE'),
        noWait: db.prepare('PRAGMA busy_timeout = 0'),
        wait: db.prepare(`PRAGMA busy_timeout = ${BUSY_TIMEOUT_MS}`),
      }),
    );
  const deadline = Date.now() + BUSY_TIMEOUT_MS;
  for (let delay = 1; ; delay = Math.min(delay * 2, 16)) {
    st.noWait.get();
    try {
      st.begin.run();
      return;
    } catch (e) {
      if (!isBusy(e) || Date.now() >= deadline) throw e;
    } finally {
      st.wait.get();
    }
    await sleep(delay);
  }
}
