import { open } from 'node:fs/promises';

/**
 * Durable SQLite commits without stalling the event loop.
 *
 * better-sqlite3 runs on the main thread, so with `synchronous = FULL` every commit waits for an
 * fsync of the write-ahead log there: nothing else in the daemon moves meanwhile (measured: the api
 * daemon spent most of a hand-off storm blocked in COMMIT, and no two commits could share a sync).
 * The store runs `synchronous = NORMAL` instead, where a commit only writes its WAL frames, and this
 * class makes them durable from the thread pool before the caller hears "done": `sync()` resolves
 * once an fsync of the WAL file that began after the call has finished, so one fsync answers every
 * commit that came before it (group commit).
 *
 * Why that is as durable as FULL: a commit's frames are appended to the WAL; fsync of the WAL inode
 * writes every frame before it. SQLite only rewinds the WAL after a checkpoint that copied the frames
 * into the database file and synced it (NORMAL syncs the WAL before and the database after each
 * checkpoint), and it removes the WAL only when the last connection closes — which checkpoints
 * first. The file is opened per sync, so a WAL created again later is the one synced. An
 * application crash between commit and sync loses nothing either way (the frames are in the page
 * cache); the caller was not answered yet, so the MTA retries a hand-off it did not see accepted.
 */
export class WalSync {
  #running: Promise<void> | null = null;
  #next: Promise<void> | null = null;
  /** fsyncs begun and finished (tests check that waiting commits share one). */
  readonly stats = { started: 0, finished: 0 };
  constructor(private readonly dbFile: string) {}

  /** Resolves when every commit made before this call is on disk. */
  sync(): Promise<void> {
    if (!this.#running) return this.#start();
    // The fsync under way may have begun before the caller's commit: wait for the one after it.
    this.#next ??= this.#running.catch(() => undefined).then(() => {
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
    let fh;
    try {
      fh = await open(`${this.dbFile}-wal`, 'r');
    } catch (e) {
      // No WAL (never written, or checkpointed away): the commits are in the database file itself.
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      fh = await open(this.dbFile, 'r');
    }
    try {
      await fh.sync();
      this.stats.finished++;
    } finally {
      await fh.close();
    }
  }
}
