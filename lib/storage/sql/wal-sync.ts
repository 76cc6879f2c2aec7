import { open, type FileHandle } from 'node:fs/promises';

/**
 * Durable SQLite commits without stalling the event loop.
 *
 * better-sqlite3 runs on the main thread, so with `synchronous = FULL` every commit waits for an
 * fsync of the write-ahead log there: nothing else in the daemon moves meanwhile, and no two commits
 * can share a sync, so a burst of hand-offs keeps the api daemon mostly blocked in COMMIT
 * (bench/README.md, ingest).
 * The store runs `synchronous = NORMAL` instead, where a commit only writes its WAL frames, and this
 * class makes them durable from the thread pool before the caller hears "done": `sync()` resolves
 * once an fsync of the WAL file that began after the call has finished, so one fsync answers every
 * commit that came before it (group commit).
 *
 * Why that is as durable as FULL: a commit's frames are appended to the WAL; fsync of the WAL inode
 * writes every frame before it. SQLite only rewinds the WAL after a checkpoint that copied the frames
 * into the database file and synced it (NORMAL syncs the WAL before and the database after each
 * checkpoint), and it removes the WAL only when the last connection closes — which checkpoints
 * first. The WAL is opened once and kept open: while this store's connection is open it is not the
 * last one, so the WAL is neither removed nor replaced (it is rewound in place), and the store closes
 * the handle when it closes its connection. Until a WAL exists the database file is synced,
 * opened per sync, so the WAL is picked up once it appears. An application crash between commit and sync loses nothing either way (the frames are in the page
 * cache); the caller was not answered yet, so the MTA retries a hand-off it did not see accepted.
 */
export class WalSync {
  #running: Promise<void> | null = null;
  #next: Promise<void> | null = null;
  #wal: FileHandle | null = null;
  /** fsyncs begun and finished (tests check that waiting commits share one), and WAL opens. */
  readonly stats = { started: 0, finished: 0, walOpens: 0 };
  constructor(private readonly dbFile: string) {}

  /** Lets go of the WAL (the store closing its connection). */
  async close(): Promise<void> {
    await this.#running?.catch(() => undefined);
    const wal = this.#wal;
    this.#wal = null;
    await wal?.close();
  }

  /** Resolves when every commit made before this call is on disk. */
  sync(): Promise<void> {
    if (!this.#running) return this.#start();
    // The fsync under way may have begun before the caller's commit: wait for the one after it.
    this.#next ??= this.#running
      .catch(() => undefined)
      .then(() => {
        this.#next = null;
        return this.#start();
      });
    return this.#next;
  }

  #start(): Promise<void> {
    const p = this.#fsync().finally(() => {
      if (this.#running === p) this.#running = null;
    });
    this.#running = p;
    return p;
  }

  async #fsync(): Promise<void> {
    this.stats.started++;
    // One fsync runs at a time (#running), so the WAL is opened by one of them only.
    if (!this.#wal) {
      try {
        this.#wal = await open(`${this.dbFile}-wal`, 'r');
        this.stats.walOpens++;
      } catch (e) {
        if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      }
    }
    if (this.#wal) {
      await this.#wal.sync();
      this.stats.finished++;
      return;
    }
    // No WAL yet (nothing written in WAL mode): the commits are in the database file itself.
    const fh = await open(this.dbFile, 'r');
    try {
      await fh.sync();
      this.stats.finished++;
    } finally {
      await fh.close();
    }
  }
}
