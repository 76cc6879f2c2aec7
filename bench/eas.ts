// The mobile-sync (Exchange ActiveSync) benchmark, against the real protocols daemon (the product's
// build staged like the package, bench/_build.ts; one process pinned to core 1), on SQLite and on
// PostgreSQL:
//  1. initial Sync of an Inbox of `messages` corpus messages with WindowSize 100, from the first
//     Sync with key 1 until MoreAvailable is gone: items/s, WBXML answer bytes per item, server CPU
//     per item (the daemon, plus every postgres process on PostgreSQL), seconds; then another
//     user's of the same mail on the daemon the first one warmed (`warm_daemon`); the issue's
//     goal is 1 000 items/s on both engines;
//  2. Ping fan-out: `devices` devices of one user parked on Ping on the same Inbox, one delivery
//     wakes them all (p50/p99 delivery → Ping answer received); then `spread_users` users with
//     devices / spread_users devices each, one delivery into each Inbox;
//  3. the daemon's RSS before parking and with every Ping parked.
//   npm run bench -- eas [messages] [devices]
// Environment: BENCH_EAS_MESSAGES (10000), BENCH_EAS_WINDOW (100), BENCH_EAS_DEVICES (2000),
// BENCH_EAS_SPREAD_USERS (200; 0 skips the spread scenario), BENCH_EAS_BACKENDS (sqlite,postgres),
// BENCH_EAS_BODY_TYPE (2: HTML; 1 plain text, 4 MIME) and BENCH_EAS_TRUNCATION (51200) of the
// Sync's BodyPreference, BENCH_EAS_REDIS=1 (the shared event channel over Redis on 127.0.0.1
// instead of the embedded hub), BENCH_PROF_DIR=dir (a V8 CPU profile of each daemon),
// BENCH_LOG_LEVEL=warn (the daemon's logs on stderr), BENCH_PG_TCP=1 (PostgreSQL over 127.0.0.1
// instead of its Unix socket), BENCH_FROM_SOURCES=1 (run the sources through tsx).
//
// The mail is filed by this process, through lib/mail's fileMessage on a Store opened on the same
// database and blob directory, and the daemon is a separate process: the Ping wake crosses
// processes on the shared event channel. Without redis:url that is the embedded hub (lib/events
// hub-transport.ts): the daemon, started first, hosts it on <data_dir>/run/events.sock, and this
// process's bus (createEventBus with the same data_dir) joins it as a peer; its folder and message
// events go through that socket to the daemon's parked Pings. With BENCH_EAS_REDIS=1 both use Redis.
import { spawn, type ChildProcess } from 'node:child_process';
import pg from 'pg';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_NODE_ARGS } from '../cli/daemons.js';
import { signToken } from '../lib/auth/index.js';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig, type Config } from '../lib/config/index.js';
import type { Deps } from '../lib/context/index.js';
import { createEventBus, LocalEventBus } from '../lib/events/index.js';
import { createLogger } from '../lib/log/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { freshPostgres, overLocalSocket, postgresAvailable } from '../test/helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../test/helpers/redis.js';
import { freePort } from '../test/helpers/scanners.js';
import { stageBuild } from './_build.js';
import { BenchDevice, deviceAgent, type SyncOptions } from './_eas-client.js';
import { fanOut, rssMiB } from './_eas-fanout.js';
import { corpus, fillInbox, seedMailbox } from './_eas-seed.js';
import { stopChild } from './_process.js';
import { commandCpuMs, cpuMsOf, percentile, round } from './_stats.js';

const SECRET = 'bench-secret-0123456789abcdef-eas';
const HEARTBEAT = 900;
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

interface Plan {
  messages: number;
  devices: number;
  spreadUsers: number;
  sync: SyncOptions;
  redis: boolean;
}

/** The daemon's settings; the bench's own config (filing, tokens) is loaded from the same values. */
function settingsOf(dbUrl: string, dir: string, port: number, redis: boolean): Record<string, unknown> {
  return {
    'auth:secret': SECRET,
    'auth:options:audience': 'bench',
    'auth:options:issuer': 'bench',
    'mail:transport:ingest:secret': 'bench-ingest-secret-0123456789',
    'datastores:sql:url': dbUrl,
    data_dir: dir,
    'log:level': process.env.BENCH_LOG_LEVEL ?? 'error',
    'listen:protocols': `127.0.0.1:${port}`,
    'mail:dev_auto_login:enabled': false,
    // Every device comes from 127.0.0.1, 2 000 of them as one user: no limiter may answer 429.
    'rateLimit:max': 10_000_000,
    'rateLimit:authenticated:max': 10_000_000,
    ...(redis ? { 'redis:url': TEST_REDIS_URL, 'redis:prefix': `svcmail-bench-eas-${process.pid}:` } : {}),
  };
}

function startDaemon(appRoot: string, values: Record<string, unknown>): ChildProcess {
  const args = Object.entries(values).flatMap(([k, v]) => ['--set', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`]);
  const prof = process.env.BENCH_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`] : [];
  // Extra V8 flags for the daemon alone (`--trace-gc`, heap sizes) when studying a figure.
  prof.push(...(process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean));
  return spawn(
    'taskset',
    ['-c', '1', process.execPath, ...DAEMON_NODE_ARGS, ...prof, join(appRoot, 'bin', 'svcmail-protocols.js'), ...args],
    {
      env: { ...process.env, NODE_ENV: 'production', SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
      stdio: ['ignore', process.env.BENCH_LOG_LEVEL ? 2 : 'ignore', 'inherit'],
    },
  );
}

async function waitReady(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`the protocols daemon exited (${child.exitCode})`);
    try {
      if ((await fetch(`${url}/protocols/status`)).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  throw new Error('the protocols daemon did not start');
}

interface Run {
  base: URL;
  pid: number;
  config: Config;
  deps: Deps;
  postgres: boolean;
  dbUrl: string;
}

/**
 * PostgreSQL's statistics of the tables just filled, as autovacuum gathers them within a minute of
 * such a fill on a real server: without them the planner takes a folder of 10 000 messages for a
 * few rows and sorts it for every page.
 */
async function analyze(dbUrl: string): Promise<void> {
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  try {
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

/**
 * Part 1: an Inbox of plan.messages messages, one device's initial Sync in windows of
 * plan.sync.window — first on the daemon as it started (its first rounds load and compile what
 * syncing needs), then another user's device's of an Inbox with the same mail on the daemon warmed
 * by the first, as a daemon serving devices is.
 */
async function initialSync(run: Run, plan: Plan, messages: Buffer[]): Promise<Record<string, unknown>> {
  // Two readers with the same mail, so the second sync shares no kept query result with the first.
  const boxes = [await seedMailbox(run.deps.store, 'reader'), await seedMailbox(run.deps.store, 'reader2')];
  const t = performance.now();
  // Filed without the shared channel: nobody listens yet, and 20 000 events need not cross to the daemon.
  for (const box of boxes) await fillInbox({ ...run.deps, events: new LocalEventBus() }, box.uid, messages, plan.messages);
  const fillSeconds = (performance.now() - t) / 1000 / boxes.length;
  if (run.postgres) await analyze(run.dbUrl);
  const agent = deviceAgent();
  try {
    const device = async (user: string, id: string) =>
      new BenchDevice(run.base, await signToken(run.config, { uid: user, ttlSeconds: 3600 }), id, agent);
    const fresh = await timedSync(run, plan, await device('reader', 'READER1'));
    const warm = await timedSync(run, plan, await device('reader2', 'READER2'));
    return {
      messages: plan.messages,
      fill_seconds: round(fillSeconds, 1),
      ...fresh,
      warm_daemon: warm,
      goal_1000_items_per_s_met: { fresh_daemon: fresh.items_per_s >= 1000, warm_daemon: warm.items_per_s >= 1000 },
    };
  } finally {
    agent.destroy();
  }
}

/** One device's initial Sync of the reader's Inbox, timed from the Sync with key 1 until MoreAvailable is gone. */
async function timedSync(run: Run, plan: Plan, device: BenchDevice) {
  await device.provision();
  const inbox = await device.inbox();
  let key = (await device.sync(inbox, 0, plan.sync)).key;
  const dbCpu = () => (run.postgres ? commandCpuMs('postgres') : 0);
  const cpu0 = { daemon: cpuMsOf(run.pid), db: dbCpu() };
  const started = performance.now();
  const roundMs: number[] = [];
  let items = 0;
  let bytes = 0;
  for (let more = true; more;) {
    const r0 = performance.now();
    const r = await device.sync(inbox, key, plan.sync);
    roundMs.push(performance.now() - r0);
    items += r.adds;
    bytes += r.bytes;
    key = r.key;
    more = r.more;
  }
  const seconds = (performance.now() - started) / 1000;
  const daemonMs = cpuMsOf(run.pid) - cpu0.daemon;
  const dbMs = dbCpu() - cpu0.db;
  const perItem = (daemonMs + dbMs) / items;
  const sorted = [...roundMs].sort((a, b) => a - b);
  return {
    rounds: roundMs.length,
    items,
    seconds: round(seconds, 2),
    items_per_s: round(items / seconds, 0),
    bytes_per_item: round(bytes / items, 0),
    server_cpu_ms_per_item: round(perItem, 3),
    daemon_cpu_ms_per_item: round(daemonMs / items, 3),
    ...(run.postgres ? { db_server_cpu_ms_per_item: round(dbMs / items, 3) } : {}),
    // What the server's CPU alone allows (one core busy per item): steadier than items_per_s on a shared machine.
    items_per_server_cpu_s: round(1000 / perItem, 0),
    round_ms_first: round(roundMs[0], 1),
    round_ms_last: round(roundMs[roundMs.length - 1], 1),
    round_ms_p50: round(percentile(sorted, 50), 1),
    round_ms_p99: round(percentile(sorted, 99), 1),
  };
}

/** One backend: a fresh database and data directory, the daemon, parts 1 to 3. */
async function backend(
  dbUrl: string,
  postgres: boolean,
  appRoot: string,
  plan: Plan,
  messages: Buffer[],
): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-eas-'));
  const port = await freePort();
  const values = settingsOf(dbUrl, dir, port, plan.redis);
  const daemon = startDaemon(appRoot, values);
  const config = loadConfig({ env: { NODE_ENV: 'production' }, values });
  const log = createLogger({ level: 'error', name: 'bench-eas' });
  let close = async () => undefined as unknown;
  try {
    const base = new URL(`http://127.0.0.1:${port}`);
    await waitReady(base.origin, daemon);
    const rssIdle = rssMiB(daemon.pid!);
    // The daemon created the schema (datastores:sql:synchronize) and hosts the hub: join both now.
    const store = await openSqlStore({ url: dbUrl, models: productModels(productRegistry()), synchronize: false });
    const events = await createEventBus(config, log);
    close = async () => {
      await events.close();
      await store.close();
    };
    const run: Run = { base, pid: daemon.pid!, config, deps: { config, store, events, log }, postgres, dbUrl };
    const out: Record<string, unknown> = { rss_idle_mib: rssIdle, initial_sync: await initialSync(run, plan, messages) };
    const fan = { base, pid: run.pid, config, deps: run.deps, sync: plan.sync, heartbeat: HEARTBEAT, raw: messages[0] };
    out.ping_one_user = await fanOut(fan, 'one', 1, plan.devices);
    if (plan.spreadUsers > 0)
      out.ping_spread = await fanOut(fan, 'spread', plan.spreadUsers, Math.max(1, Math.round(plan.devices / plan.spreadUsers)));
    out.rss_end_mib = rssMiB(daemon.pid!);
    return out;
  } finally {
    await close();
    await stopChild(daemon);
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The soft limit on open files of this process (the daemon inherits it). */
const fdLimit = () => Number(/Max open files\s+(\d+)/.exec(readFileSync('/proc/self/limits', 'utf8'))?.[1] ?? NaN);

export default async function eas(args: string[]): Promise<Record<string, unknown>> {
  const plan: Plan = {
    messages: Number(args[0] ?? env('BENCH_EAS_MESSAGES', 10_000)),
    devices: Number(args[1] ?? env('BENCH_EAS_DEVICES', 2_000)),
    spreadUsers: env('BENCH_EAS_SPREAD_USERS', 200),
    sync: {
      window: env('BENCH_EAS_WINDOW', 100),
      bodyType: env('BENCH_EAS_BODY_TYPE', 2),
      truncation: env('BENCH_EAS_TRUNCATION', 51_200),
    },
    redis: Boolean(process.env.BENCH_EAS_REDIS),
  };
  const out: Record<string, unknown> = { cores: 2, fd_limit: fdLimit(), ...plan, heartbeat_seconds: HEARTBEAT };
  // Each parked Ping holds a socket in this process and one in the daemon, besides what both open anyway.
  if (plan.devices + 500 > fdLimit()) out.fd_warning = `the open-file limit (${fdLimit()}) is below ${plan.devices} parked Pings + 500`;
  if (plan.redis && !(await redisAvailable())) return { ...out, skipped: 'BENCH_EAS_REDIS=1 needs Redis on 127.0.0.1' };
  out.event_channel = plan.redis ? 'redis' : 'embedded hub (unix socket, hosted by the daemon)';
  const messages = corpus();
  const stage = stageBuild();
  out.code = stage.code;
  const which = (process.env.BENCH_EAS_BACKENDS ?? 'sqlite,postgres').split(',');
  try {
    if (which.includes('sqlite')) {
      const d = mkdtempSync(join(tmpdir(), 'svcmail-bench-eas-db-'));
      try {
        out.sqlite = await backend(`sqlite:${join(d, 'b.sqlite')}`, false, stage.root, plan, messages);
      } finally {
        rmSync(d, { recursive: true, force: true });
      }
    }
    if (which.includes('postgres')) {
      if (!(await postgresAvailable())) out.postgres = 'not measured: PostgreSQL does not answer on 127.0.0.1';
      else {
        const db = await freshPostgres();
        const url = process.env.BENCH_PG_TCP ? db.url : overLocalSocket(db.url);
        out.postgres_connection = url === db.url ? 'tcp' : 'unix socket';
        try {
          out.postgres = await backend(url, true, stage.root, plan, messages);
        } finally {
          await db.drop();
        }
      }
    }
  } finally {
    stage.remove();
  }
  return out;
}
