// One run of the ingest benchmark (bench/ingest.ts): the corpus, the real api and worker daemons of
// the staged build (one copy or several sharing PostgreSQL, Redis and a blob directory), the
// hand-offs from 16 senders, and the figures of what was filed and what it cost.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DAEMON_NODE_ARGS } from '../cli/daemons.js';
import { signToken } from '../lib/auth/index.js';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig } from '../lib/config/index.js';
import { IngestEntryModel, filingAvailable, type IngestEntry } from '../lib/ingest/index.js';
import { datastoreSettings, openStoreToCheck, type Store } from '../lib/storage/index.js';
import { TEST_REDIS_URL } from '../test/helpers/redis.js';
import { freePort } from '../test/helpers/scanners.js';
import { commandCpuMs, cpuMsOf, percentile, round } from './_stats.js';

export const SECRET = 'bench-secret-0123456789abcdef';
const INGEST = 'bench-ingest-secret-0123456789';
export const SENDERS = 16;
export const MAILBOXES = 50;
/** What the daemons run: the product's build staged like the installed package (bench/_build.ts), or the checkout with BENCH_FROM_SOURCES=1. */
let appRoot = new URL('..', import.meta.url).pathname;
/** Runs the daemons from this tree (the staged build's root: bench/_build.ts). */
export const setAppRoot = (root: string) => (appRoot = root);
export const rcptsOf = (i: number) => Array.from({ length: 1 + (i % 3) }, (_, k) => `user${(i * 7 + k * 13) % MAILBOXES}@bench.test`);
/** The SMTP client a message came from (an address rspamd does not count as local: SPF, DMARC and the IP lists run). */
export const clientOf = (i: number) => ({ address: `203.0.113.${1 + (i % 250)}`, helo: `mx${i % 50}.remote.example` });

export { corpus } from './_eas-seed.js';

function daemon(bin: string, env: string, sets: Record<string, unknown>, core: string): ChildProcess {
  const args = Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`]);
  // BENCH_PROF_DIR=dir writes a V8 CPU profile of each daemon there (node --cpu-prof) for analysis.
  const prof = process.env.BENCH_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`] : [];
  // The node arguments the systemd units give every daemon (cli/daemons.ts): measured as the package runs.
  return spawn('taskset', ['-c', core, process.execPath, ...DAEMON_NODE_ARGS, ...prof, join(appRoot, 'bin', bin), ...args], {
    env: { ...process.env, NODE_ENV: env, SVCMAIL_CONFIG: '' },
    stdio: ['ignore', process.env.BENCH_LOG_LEVEL ? 2 : 'ignore', 'inherit'],
  });
}

/** CPU seconds a daemon has used so far (Linux /proc; null elsewhere or once it is gone). */
function cpuSeconds(c: ChildProcess | null): number | null {
  try {
    return c?.pid ? cpuMsOf(c.pid) / 1000 : null;
  } catch {
    return null;
  }
}

/** CPU seconds of several daemons together (null when one cannot be read). */
function cpuSum(cs: ChildProcess[]): number | null {
  let sum = 0;
  for (const c of cs) {
    const s = cpuSeconds(c);
    if (s === null) return null;
    sum += s;
  }
  return sum;
}

const used = (now: number | null, start: number | null) => (now === null || start === null ? null : now - start);

const stop = (c: ChildProcess) =>
  new Promise<void>((r) => {
    if (c.exitCode !== null) return r();
    c.once('exit', () => r());
    c.kill('SIGTERM');
  });

async function waitReady(url: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    try {
      if ((await fetch(`${url}/api/status`)).ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('api daemon did not start');
}

/** Until the worker daemon answers on its wake address (started, schema open): its CPU is counted from then on. */
async function waitWorker(wake: string): Promise<void> {
  for (let i = 0; i < 300; i++) {
    try {
      if ((await fetch(`http://${wake}/wake`, { method: 'POST' })).status < 500) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('worker daemon did not start');
}

export interface ScannerAddresses {
  rspamdUrl: string;
  clamdAddress: string;
}

/**
 * One run: `copies` pairs of api and worker daemons (each pair with its own data_dir and wake
 * address; `scaledOut` (default: with two or more), Redis and a shared blob directory as
 * ARCHITECTURE.md describes), the hand-offs spread over their api daemons.
 */
export async function run(
  dbUrl: string,
  scan: 'dev' | 'real',
  count: number,
  messages: Buffer[],
  scanners: ScannerAddresses | null,
  copies = 1,
  scaledOut = copies > 1,
): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-ingest-'));
  const scaleOut = scaledOut
    ? { 'redis:url': TEST_REDIS_URL, 'redis:prefix': `svcmail-bench-${process.pid}:`, 'mail:blobs:dir': join(dir, 'shared-blobs') }
    : {};
  const shared = {
    'auth:secret': SECRET,
    'auth:options:audience': 'bench',
    'auth:options:issuer': 'bench',
    ...datastoreSettings(dbUrl),
    'mail:transport:ingest:secret': INGEST,
    'log:level': process.env.BENCH_LOG_LEVEL ?? 'error',
    'mail:internal:max_failures': 1000,
    'mail:scan:rspamd:url': scanners?.rspamdUrl ?? `http://127.0.0.1:${await freePort()}`,
    'mail:scan:clamd:address': scanners?.clamdAddress ?? `127.0.0.1:${await freePort()}`,
    ...scaleOut,
  };
  // Copy k: its own data directory and wake address; its api daemon on core k % 2, its worker on the other.
  const each = await Promise.all(
    Array.from({ length: copies }, async (_, k) => ({
      core: k % 2,
      url: `http://127.0.0.1:${await freePort()}`,
      common: { ...shared, data_dir: join(dir, `copy${k}`), 'mail:jobs:wake_address': `127.0.0.1:${await freePort()}` },
    })),
  );
  const apis = each.map((c) =>
    daemon('svcmail-api.js', 'production', { ...c.common, 'listen:api': c.url.slice('http://'.length) }, `${c.core}`),
  );
  const urls = each.map((c) => c.url);
  const url = urls[0];
  const workers: ChildProcess[] = [];
  let store: Store | null = null;
  try {
    for (const u of urls) await waitReady(u);
    // the api daemon creates the schema: open the bench's own view of the store only once it answers
    store = await openStoreToCheck(
      loadConfig({ env: { NODE_ENV: 'production' }, values: datastoreSettings(dbUrl) ?? {} }),
      productModels(productRegistry()),
    );
    // Development scanner = the spec's development fallback (no scanner answers: clean, with a warning).
    const filing = filingAvailable() && !process.env.BENCH_ACCEPT_ONLY;
    // BENCH_WORKER_AFTER=1: the worker starts once every hand-off was accepted and drains the queue
    // alone (its cost per copy without the api daemon's load beside it: A/B runs of filing changes).
    const startWorker = async () => {
      for (const c of each) {
        workers.push(daemon('svcmail-worker.js', scan === 'dev' ? 'development' : 'production', c.common, `${1 - c.core}`));
        await waitWorker(c.common['mail:jobs:wake_address']);
      }
    };
    if (filing && !process.env.BENCH_WORKER_AFTER) await startWorker();
    const config = loadConfig({
      env: { NODE_ENV: 'production' },
      values: { 'auth:secret': SECRET, 'auth:options:audience': 'bench', 'auth:options:issuer': 'bench' },
    });
    const admin = await signToken(config, { uid: 'root', roles: ['admin'], elevated: true });
    const post = (path: string, body: unknown) =>
      fetch(url + path, {
        method: 'POST',
        headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
      });
    await post('/api/mail/domains', { name: 'bench.test', verified: true });
    for (let i = 0; i < MAILBOXES; i++) await post('/api/mail/mailboxes', { address: `user${i}@bench.test`, owners: [`user${i}`] });
    let next = 0;
    let copies = 0;
    let errors = 0;
    // The database server's CPU (PostgreSQL; SQLite runs inside the daemons) over the same span.
    const dbCpuOf = () => (dbUrl.startsWith('postgres') ? commandCpuMs('postgres') : null);
    const cpuAtStart = { api: cpuSum(apis), worker: cpuSum(workers), db: dbCpuOf() };
    const started = performance.now();
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (next < count) {
          const i = next++;
          const rcpts = rcptsOf(i);
          const res = await fetch(`${urls[i % urls.length]}/internal/mta/deliver`, {
            method: 'POST',
            body: new Uint8Array(messages[i % messages.length]),
            headers: {
              authorization: `Bearer ${INGEST}`,
              'x-envelope-from': 'sender%40remote.example',
              'x-envelope-to': rcpts.map(encodeURIComponent).join(','),
              'x-transaction-id': `B${i}`,
              'x-envelope-client-address': clientOf(i).address,
              'x-envelope-client-helo': clientOf(i).helo,
            },
          });
          const body = (await res.json()) as { queued?: number };
          if (res.status !== 202) errors++;
          else copies += body.queued ?? 0;
        }
      }),
    );
    const acceptSeconds = (performance.now() - started) / 1000;
    const apiCpu = used(cpuSum(apis), cpuAtStart.api);
    if (!filingAvailable() || process.env.BENCH_ACCEPT_ONLY) {
      return {
        messages: count,
        copies,
        errors,
        accepted_per_s: round(count / acceptSeconds, 0),
        api_cpu_ms_per_message: apiCpu === null ? null : round((apiCpu * 1000) / count, 2),
        filed: process.env.BENCH_ACCEPT_ONLY
          ? 'not measured: BENCH_ACCEPT_ONLY (hand-off only, no worker)'
          : 'not measured: lib/mail does not export fileMessage yet',
      };
    }
    const workerStarted = Date.now();
    if (process.env.BENCH_WORKER_AFTER) {
      await startWorker();
      cpuAtStart.worker = cpuSum(workers);
    }
    const repo = store.repo<IngestEntry>(IngestEntryModel);
    const deadline = Date.now() + 30 * 60_000;
    while (Date.now() < deadline && (await repo.count({ state: 'queued' })) > 0) await new Promise((r) => setTimeout(r, 250));
    const workerCpu = used(cpuSum(workers), cpuAtStart.worker);
    const dbCpuMs = used(dbCpuOf(), cpuAtStart.db);
    const rows = await repo.list({ limit: 1_000_000 });
    const done = rows.filter((r) => r.finishedAt);
    const first = Math.min(...rows.map((r) => r.createdAt.getTime()));
    const last = Math.max(...done.map((r) => r.finishedAt!.getTime()));
    const lat = done.map((r) => r.finishedAt!.getTime() - r.createdAt.getTime()).sort((a, b) => a - b);
    const states: Record<string, number> = {};
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1;
    return {
      messages: count,
      copies,
      errors,
      accepted_per_s: round(count / acceptSeconds, 0),
      filed_copies_per_s: round(done.length / ((last - first) / 1000), 0),
      filed_messages_per_s: round((count * done.length) / Math.max(1, copies) / ((last - first) / 1000), 0),
      p50_handoff_to_filed_ms: percentile(lat, 50),
      p99_handoff_to_filed_ms: percentile(lat, 99),
      states,
      // CPU per unit of work (from the first hand-off on): what the rates cost, less disturbed by neighbours.
      api_cpu_ms_per_message: apiCpu === null ? null : round((apiCpu * 1000) / count, 2),
      worker_cpu_ms_per_copy: workerCpu === null ? null : round((workerCpu * 1000) / Math.max(1, done.length), 2),
      ...(dbCpuMs === null ? {} : { db_server_cpu_ms_per_copy: round(dbCpuMs / Math.max(1, done.length), 2) }),
      ...(process.env.BENCH_WORKER_AFTER ? { worker_alone_copies_per_s: round(done.length / ((last - workerStarted) / 1000), 0) } : {}),
    };
  } finally {
    for (const w of workers) await stop(w);
    for (const a of apis) await stop(a);
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
