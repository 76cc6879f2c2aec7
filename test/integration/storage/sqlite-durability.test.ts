// SQLite across processes and its durable commits (lib/storage/sql/adapter.ts inTransaction,
// lib/storage/sql/wal-sync.ts). The api daemon queues mail while the worker daemon files it, two
// processes writing one file: a transaction that reads before it writes must wait for the other
// writer, not fail with "database is locked" (found by bench/ingest.ts: entries failed and waited
// out mail:ingest:retry_backoff_seconds).
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineModel, type Repo } from '../../../lib/storage/index.js';
import type { SqlStore } from '../../../lib/storage/sql/adapter.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { WalSync } from '../../../lib/storage/sql/wal-sync.js';
import { CHECKPOINT_EVERY, START_AFTER } from '../../../lib/storage/sql/checkpointer.js';
import { freshSqlite, type TestDatabase } from '../../helpers/databases.js';

const Counter = defineModel({
  name: 'durability_counter',
  table: 'durability_counters',
  fields: { name: z.string(), n: z.number().int() },
});
type CounterT = { name: string; n: number };
const jobsModel = defineModel({ name: 'durability_job', table: 'durability_jobs', fields: { state: z.string() }, lease: true });
const betterSqlite = createRequire(import.meta.url).resolve('better-sqlite3');

/**
 * Node running `src` with better-sqlite3 open on `file`: `ready` resolves when it prints `marker`,
 * `done` with everything it printed once it exits 0.
 */
function sqliteProcess(file: string, src: string, marker: string) {
  const child = spawn(
    process.execPath,
    ['-e', `const Database = require(${JSON.stringify(betterSqlite)});\nconst db = new Database(${JSON.stringify(file)});\n${src}`],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  const ready = new Promise<void>((resolve) =>
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
      if (out.includes(marker)) resolve();
    }),
  );
  const done = new Promise<string>((resolve, reject) =>
    child.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`child exited ${code}`)))),
  );
  return { ready, done };
}

/** Another process writing the same file in a tight loop (autocommit inserts, as a second daemon would). */
function hammer(file: string, ms: number) {
  const p = sqliteProcess(
    file,
    `
    db.pragma('busy_timeout = 5000');
    db.exec('CREATE TABLE IF NOT EXISTS hammer (x INTEGER)');
    const ins = db.prepare('INSERT INTO hammer (x) VALUES (?)');
    const end = Date.now() + ${ms};
    let n = 0;
    process.stdout.write('started\\n');
    while (Date.now() < end) { db.transaction(() => { for (let i = 0; i < 20; i++) ins.run(n++); })(); }
    process.stdout.write('wrote ' + n + '\\n');`,
    'started',
  );
  return { started: p.ready, done: p.done.then((out) => Number(/wrote (\d+)/.exec(out)?.[1] ?? 0)) };
}

/** Another process that takes the write lock and holds it for ms (a long transaction elsewhere). */
function holder(file: string, ms: number) {
  const p = sqliteProcess(
    file,
    `
    db.exec('BEGIN IMMEDIATE');
    process.stdout.write('locked\\n');
    const end = Date.now() + ${ms};
    while (Date.now() < end) { /* holding the lock */ }
    db.exec('COMMIT');`,
    'locked',
  );
  return { locked: p.ready, done: p.done };
}

/** How often a 1 ms timer fired while fn ran (none when fn blocks the event loop). */
async function timerTicksDuring<R>(fn: () => Promise<R>): Promise<{ ticks: number; result: R }> {
  let ticks = 0;
  let pending = true;
  const tick = () => {
    if (!pending) return;
    ticks++;
    setTimeout(tick, 1);
  };
  setTimeout(tick, 1);
  try {
    return { result: await fn(), ticks };
  } finally {
    pending = false;
  }
}

describe('SQLite store with another process writing', () => {
  let db: TestDatabase;
  let store: SqlStore;
  let counters: Repo<CounterT>;
  beforeAll(async () => {
    db = freshSqlite();
    store = await openSqlStore({ url: db.url, models: [Counter, jobsModel], synchronize: true });
    counters = store.repo<CounterT>(Counter);
  });
  afterAll(async () => {
    await store?.close();
    await db?.drop();
  });

  it('read-then-write transactions wait for the other writer instead of failing with "database is locked"', async () => {
    const c = await counters.create({ name: 'c', n: 0 });
    const other = hammer(db.url.replace(/^sqlite:/, ''), 3000);
    await other.started;
    let done = 0;
    const failures: string[] = [];
    const until = Date.now() + 2500;
    // Several transactions in flight, each reading first, yielding to the event loop, then writing:
    // with a deferred BEGIN the other process commits in between and SQLite refuses the upgrade.
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (Date.now() < until) {
          await store
            .transaction(async (tx) => {
              const repo = tx.repo<CounterT>(Counter);
              const cur = await repo.get(c.uid);
              await new Promise((r) => setTimeout(r, 2));
              await repo.update(c.uid, { n: cur!.n + 1 });
            })
            .then(
              () => done++,
              (e: Error) => failures.push(e.message),
            );
        }
      }),
    );
    const theirs = await other.done;
    expect(failures).toEqual([]);
    expect(theirs).toBeGreaterThan(0);
    expect(done).toBeGreaterThan(10);
    // every increment counted: no lost update between the read and the write
    expect((await counters.get(c.uid))!.n).toBe(done);
  }, 30_000);

  it("waits for another process's write lock without stalling the event loop", async () => {
    const c = await counters.create({ name: 'lock', n: 0 });
    const other = holder(db.url.replace(/^sqlite:/, ''), 600);
    await other.locked;
    // Timers keep firing while the transaction waits for the lock: SQLite's own busy handler would
    // sleep in this thread for the whole 600 ms and none would.
    const { ticks } = await timerTicksDuring(() =>
      store.transaction(async (tx) => {
        await tx.repo<CounterT>(Counter).update(c.uid, { n: 1 });
      }),
    );
    await other.done;
    expect(ticks).toBeGreaterThan(20);
    expect((await counters.get(c.uid))!.n).toBe(1);
  }, 30_000);

  it('claims without stalling the event loop while another process holds the write lock', async () => {
    const jobs = store.repo<{ state: string }>(jobsModel);
    await jobs.create({ state: 'queued' });
    const other = holder(db.url.replace(/^sqlite:/, ''), 600);
    await other.locked;
    const { ticks, result: got } = await timerTicksDuring(() => jobs.claim({ state: 'queued' }, { owner: 'w', leaseMs: 60_000, limit: 5 }));
    await other.done;
    expect(got).toHaveLength(1);
    expect(ticks).toBeGreaterThan(20); // SQLite's busy handler would have slept in this thread for the 600 ms
  }, 30_000);

  it('answers a write only after an fsync of the WAL that began after its commit, one fsync for many waiting commits', async () => {
    const sync = store.walSync!;
    expect(sync).toBeInstanceOf(WalSync);
    const before = { ...sync.stats };
    await Promise.all(Array.from({ length: 40 }, (_, i) => counters.create({ name: `g${i}`, n: i })));
    const after = { ...sync.stats };
    // each create waited for a finished fsync, and the waiting ones shared fsyncs
    expect(after.finished - before.finished).toBeGreaterThanOrEqual(1);
    expect(after.started - before.started).toBeLessThan(40);
    expect(after.walOpens).toBe(1); // the WAL stays open between syncs
    expect(await counters.count({})).toBeGreaterThanOrEqual(40);
  });
});

describe('WalSync', () => {
  it('does not let a sync asked for during a running fsync finish with it: the next fsync answers it, shared by all who asked meanwhile', async () => {
    const db = freshSqlite();
    const store = await openSqlStore({ url: db.url, models: [Counter], synchronize: true });
    try {
      await store.repo<CounterT>(Counter).create({ name: 'x', n: 1 }); // a WAL exists
      const s = new WalSync(db.url.replace(/^sqlite:/, ''));
      const first = s.sync();
      const second = s.sync(); // asked while the first fsync runs
      const third = s.sync(); // shares the second
      expect(s.stats.started).toBe(1);
      await first;
      await second;
      await third;
      expect(s.stats).toEqual({ started: 2, finished: 2, walOpens: 1 });
      await s.sync(); // nothing running: starts at once
      expect(s.stats).toEqual({ started: 3, finished: 3, walOpens: 1 });
      await s.close();
    } finally {
      await store.close();
      await db.drop();
    }
  });

  it('syncs the database file until a WAL exists, then opens the WAL once and keeps it until closed', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-walsync-'));
    const file = join(dir, 'x.sqlite');
    writeFileSync(file, 'db');
    const s = new WalSync(file);
    try {
      await s.sync();
      expect(s.stats).toEqual({ started: 1, finished: 1, walOpens: 0 });
      writeFileSync(`${file}-wal`, 'wal');
      await s.sync();
      await s.sync();
      expect(s.stats).toEqual({ started: 3, finished: 3, walOpens: 1 });
      await s.close();
      await s.sync(); // a closed syncer opens the WAL again when asked
      expect(s.stats.walOpens).toBe(2);
    } finally {
      await s.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('WAL checkpoints on a thread of their own', () => {
  it('takes over from the automatic checkpoint after START_AFTER commits, keeps the WAL bounded, and loses nothing', async () => {
    const db = freshSqlite();
    const file = db.url.replace(/^sqlite:/, '');
    let store = await openSqlStore({ url: db.url, models: [Counter], synchronize: true });
    const raw = () =>
      (store as unknown as { ctx: { ds: { driver: { databaseConnection: { pragma(s: string, o?: object): unknown } } } } }).ctx.ds.driver
        .databaseConnection;
    try {
      const repo = store.repo<CounterT>(Counter);
      const cp = store.checkpointer!;
      for (let i = 0; i < START_AFTER - 1; i++) await repo.create({ name: `a${i}`, n: i });
      expect(cp.stats.started).toBe(false);
      expect(raw().pragma('wal_autocheckpoint', { simple: true })).toBe(1000); // SQLite's own, until the thread runs
      const body = 'x'.repeat(3000); // about a page per commit
      const total = START_AFTER - 1 + 12 * CHECKPOINT_EVERY;
      for (let i = START_AFTER - 1; i < total; i++) await repo.create({ name: `${body}${i}`, n: i });
      expect(cp.stats.started).toBe(true);
      expect(raw().pragma('wal_autocheckpoint', { simple: true })).toBe(0); // the main thread no longer checkpoints
      await expect.poll(() => cp.stats.checkpoints, { timeout: 5000 }).toBeGreaterThanOrEqual(5);
      expect(cp.stats.failures).toBe(0);
      expect(cp.stats.framesCopied).toBeGreaterThan(0);
      // Checkpoints let the writer rewind the WAL: without any the 1 300 commits would have taken it
      // past 5 MB (they wrote more than a page each).
      expect(statSync(`${file}-wal`).size).toBeLessThan(4 * 1024 * 1024);
      await store.close();
      store = await openSqlStore({ url: db.url, models: [Counter], synchronize: false });
      expect(await store.repo<CounterT>(Counter).count({})).toBe(total);
    } finally {
      await store.close();
      await db.drop();
    }
  }, 60_000);
});
