import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

/**
 * SQLite WAL checkpoints off the event loop.
 *
 * SQLite's automatic checkpoint runs inside the COMMIT that takes the WAL past 1 000 pages, on the
 * committing connection — with better-sqlite3 the daemon's only thread: it copies the WAL into the
 * database file and fsyncs that file, and nothing else in the process moves meanwhile: a commit that
 * carries a checkpoint stalls the daemon for milliseconds (bench/README.md, ingest). Once a store has
 * committed START_AFTER times (a short-lived CLI run never gets here), a thread of its own opens a second
 * connection to the file and runs PASSIVE checkpoints there — after every CHECKPOINT_EVERY commits
 * and once a second while there were any — and the main connection's automatic checkpoint is
 * switched off. The checkpoint runs while the store's own lock is held (its statements wait, its
 * event loop does not): a checkpoint that writers in this process appended to meanwhile would never
 * copy all of the WAL, and only a complete one lets the next writer rewind it — under a steady
 * stream of commits the WAL would grow without end. Durability is unchanged: commits are
 * durable through WalSync's fsync of the WAL before anyone is answered, and the checkpoint syncs the
 * database file before the WAL can be rewound. If the thread fails, automatic checkpoints come back.
 */
export const START_AFTER = 100;
export const CHECKPOINT_EVERY = 100;

// CommonJS, evaluated as the thread's code; the driver's path is handed in (no resolution in the thread).
const THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
const Database = require(workerData.driver);
const db = new Database(workerData.file, { fileMustExist: true });
parentPort.on('message', (m) => {
  if (m === 'close') {
    db.close();
    parentPort.close();
    return;
  }
  try {
    const [r] = db.pragma('wal_checkpoint(PASSIVE)');
    parentPort.postMessage({ ok: true, busy: r.busy, log: r.log, checkpointed: r.checkpointed });
  } catch (e) {
    parentPort.postMessage({ ok: false, error: String((e && e.message) || e) });
  }
});
`;

interface MainConnection {
  pragma(sql: string): unknown;
}

/** The store's lock (sqlite-lock.ts Mutex): nothing of this process touches the database while fn runs. */
interface StoreLock {
  run<R>(fn: () => Promise<R>): Promise<R>;
}

export class Checkpointer {
  #commits = 0;
  #since = 0;
  #thread: Worker | null = null;
  #busy = false;
  #answer: (() => void) | null = null;
  #timer: NodeJS.Timeout | null = null;
  #closed = false;
  /** Checkpoints run and failed, and WAL frames copied (tests and diagnostics). */
  readonly stats = { started: false, checkpoints: 0, failures: 0, framesCopied: 0 };

  constructor(
    private readonly file: string,
    private readonly main: MainConnection,
    private readonly lock: StoreLock,
  ) {}

  /** A commit on the main connection (called after it is durable). */
  committed(): void {
    if (this.#closed) return;
    this.#since++;
    if (++this.#commits === START_AFTER) this.#start();
    if (this.#since >= CHECKPOINT_EVERY) this.#request();
  }

  #start(): void {
    const driver = createRequire(import.meta.url).resolve('better-sqlite3');
    let thread: Worker;
    try {
      thread = new Worker(THREAD, { eval: true, workerData: { file: this.file, driver } });
    } catch {
      return; // automatic checkpoints stay on
    }
    thread.unref();
    thread.on('message', (r: { ok: boolean; checkpointed?: number }) => {
      this.#answered();
      if (r.ok) {
        this.stats.checkpoints++;
        this.stats.framesCopied += Math.max(0, r.checkpointed ?? 0);
      } else this.stats.failures++;
    });
    thread.on('error', () => this.#fallBack());
    thread.on('exit', () => {
      if (!this.#closed) this.#fallBack();
    });
    this.#thread = thread;
    this.stats.started = true;
    this.main.pragma('wal_autocheckpoint = 0');
    this.#timer = setInterval(() => {
      if (this.#since > 0) this.#request();
    }, 1000);
    this.#timer.unref();
  }

  /** The thread is gone: SQLite's own automatic checkpoints take over again. */
  #fallBack(): void {
    this.#thread = null;
    this.#answered();
    if (this.#timer) clearInterval(this.#timer);
    this.#timer = null;
    if (!this.#closed) {
      try {
        this.main.pragma('wal_autocheckpoint = 1000');
      } catch {
        /* the connection is closing */
      }
    }
  }

  #answered(): void {
    const answer = this.#answer;
    this.#answer = null;
    answer?.();
  }

  #request(): void {
    if (this.#busy || !this.#thread) return;
    this.#busy = true;
    this.#since = 0;
    void this.lock
      .run(
        () =>
          new Promise<void>((resolve) => {
            const thread = this.#thread;
            if (!thread) return resolve();
            this.#answer = resolve;
            thread.postMessage('checkpoint');
          }),
      )
      .finally(() => {
        this.#busy = false;
      });
  }

  /** Stops the thread (its connection closed first); call before the main connection closes. */
  async close(): Promise<void> {
    this.#closed = true;
    if (this.#timer) clearInterval(this.#timer);
    const thread = this.#thread;
    this.#thread = null;
    if (!thread) return;
    const exited = new Promise<void>((r) => thread.once('exit', () => r()));
    thread.postMessage('close');
    const timeout = setTimeout(() => void thread.terminate(), 5000);
    await exited;
    clearTimeout(timeout);
  }
}
