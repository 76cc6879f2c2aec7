// npm run bench -- push [--sockets 10000] [--rate 1000] [--seconds 10]
// N authenticated sockets on one push daemon (a real process on its own core), each subscribed to
// its own folder; events published at a fixed rate from another process over the embedded hub (as
// the worker does); publish→receive latency and the daemon's RSS. Peer in the same run: a bare
// `ws` server routing the same frames to the same number of sockets (no auth, ACL or channel).
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { AclEntryModel } from '../lib/acl/index.js';
import { signToken } from '../lib/auth/index.js';
import { productModels, productRegistry } from '../lib/catalog.js';
import { loadConfig } from '../lib/config/index.js';
import { createEventBus } from '../lib/events/index.js';
import { FolderModel, MailboxModel } from '../lib/mail/index.js';
import { openSqlStore } from '../lib/storage/sql/open.js';
import { percentile, round } from './_stats.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const arg = (args: string[], name: string, dflt: number) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? Number(args[i + 1]) : dflt;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

function rssOf(pid: number): { rssMiB: number; peakMiB: number } {
  const s = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = (k: string) => Number(new RegExp(`${k}:\\s+(\\d+)`).exec(s)?.[1] ?? 0);
  return { rssMiB: round(kb('VmRSS') / 1024, 1), peakMiB: round(kb('VmHWM') / 1024, 1) };
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const p = (s.address() as { port: number }).port;
      s.close(() => resolve(p));
    });
  });
}

async function waitHttp(url: string, child: ChildProcess): Promise<void> {
  for (let i = 0; i < 300; i++) {
    if (child.exitCode !== null) throw new Error(`daemon exited ${child.exitCode}`);
    try {
      if ((await fetch(url)).ok) return;
    } catch {
      /* not yet */
    }
    await sleep(100);
  }
  throw new Error(`${url} not ready`);
}

/** Opens sockets in batches; each resolves once `ready` says so. */
async function openAll(
  n: number,
  make: (i: number) => WebSocket,
  ready: (ws: WebSocket, i: number) => Promise<void>,
): Promise<WebSocket[]> {
  const out: WebSocket[] = new Array(n);
  for (let start = 0; start < n; start += 500) {
    await Promise.all(
      Array.from({ length: Math.min(500, n - start) }, async (_, k) => {
        const i = start + k;
        const ws = make(i);
        out[i] = ws;
        await ready(ws, i);
      }),
    );
  }
  return out;
}

/** Publishes `rate` events per second for `seconds`, in 10 ms ticks; answers how many. */
async function drive(rate: number, seconds: number, publish: (i: number) => void, n: number): Promise<number> {
  let sent = 0;
  const started = performance.now();
  while (performance.now() - started < seconds * 1000) {
    const due = Math.floor(((performance.now() - started) / 1000) * rate);
    for (; sent < due; sent++) publish(Math.floor(Math.random() * n));
    await sleep(5);
  }
  return sent;
}

function figures(lat: number[], sent: number) {
  lat.sort((a, b) => a - b);
  return {
    sent,
    received: lat.length,
    p50Ms: round(percentile(lat, 50)),
    p99Ms: round(percentile(lat, 99)),
    maxMs: round(lat[lat.length - 1] ?? NaN),
  };
}

export default async function bench(args: string[]): Promise<Record<string, unknown>> {
  const n = arg(args, 'sockets', 10_000);
  const rate = arg(args, 'rate', 1000);
  const seconds = arg(args, 'seconds', 10);
  const dir = mkdtempSync(join(tmpdir(), 'svcbench-push-'));
  const secret = 'bench-secret-0123456789abcdef-push';
  const port = await freePort();
  const values = {
    data_dir: dir,
    'datastores:sql:url': `sqlite:${join(dir, 'db.sqlite')}`,
    'log:level': 'warn',
    'auth:secret': secret,
    'auth:options:audience': 'bench',
    'auth:options:issuer': 'bench',
    'mail:dev_auto_login:enabled': false,
    'listen:push': `127.0.0.1:${port}`,
    'mail:push:max_channels': 10,
  };
  const file = join(dir, 'svcmail.json');
  writeFileSync(file, JSON.stringify(values));
  const config = loadConfig({ file, env: { NODE_ENV: 'test' } });

  // Seed N users, each owning a mailbox with one folder, straight into the store.
  const registry = productRegistry();
  const store = await openSqlStore({ url: values['datastores:sql:url'], models: productModels(registry), synchronize: true });
  const folders: string[] = [];
  const t0 = Date.now();
  await store.transaction(async (tx) => {
    for (let i = 0; i < n; i++) {
      const box = await tx.repo<Record<string, unknown>>(MailboxModel).create({
        address: `u${i}@bench.test`,
        name: `u${i}`,
        aliases: [],
        blockedSenders: [],
        safeSenders: [],
        quotaBytes: 0,
        usedBytes: 0,
        receiptSettings: { internal: 'ask', federated: 'ask', external: 'never' },
      });
      await tx
        .repo<Record<string, unknown>>(AclEntryModel)
        .create({ resource: 'mailboxes', resourceUid: box.uid, subject: `user:u${i}`, rights: ['owner'], mailboxUid: box.uid });
      const f = await tx
        .repo<Record<string, unknown>>(FolderModel)
        .create({ mailboxUid: box.uid, parentUid: null, name: 'Inbox', role: 'inbox', unreadCount: 0, totalCount: 0 });
      folders.push(f.uid);
    }
  });
  await store.close();
  const seedSeconds = (Date.now() - t0) / 1000;

  const children: ChildProcess[] = [];
  const result: Record<string, unknown> = { sockets: n, rate, publishSeconds: seconds, seedSeconds };
  try {
    // The push daemon on core 1; this process (clients and publisher) is not pinned.
    const push = spawn('taskset', ['-c', '1', process.execPath, join(ROOT, 'bin/svcmail-push.js'), '--config', file], {
      cwd: ROOT,
      env: { ...process.env, NODE_ENV: 'test', NOTIFY_SOCKET: '' },
      stdio: ['ignore', 'inherit', 'inherit'],
    });
    children.push(push);
    await waitHttp(`http://127.0.0.1:${port}/push/status`, push);
    const idleRss = rssOf(push.pid!);
    const bus = await createEventBus(config);
    const tokens = await Promise.all(Array.from({ length: n }, (_, i) => signToken(config, { uid: `u${i}`, ttlSeconds: 3600 })));
    const lat: number[] = [];
    const tc = Date.now();
    const sockets = await openAll(
      n,
      (i) => new WebSocket(`ws://127.0.0.1:${port}/push`, { headers: { authorization: `Bearer ${tokens[i]}` }, perMessageDeflate: false }),
      (ws, i) =>
        new Promise((resolve, reject) => {
          ws.once('error', reject);
          ws.on('message', (raw) => {
            const f = JSON.parse(raw.toString()) as { type: string; data: { data: { t: number } } };
            if (f.type === 'MESSAGE') lat.push(performance.now() - f.data.data.t);
            else if (f.type === 'LOGGED_IN') ws.send(JSON.stringify({ id: 1, type: 'SUBSCRIBE', data: [folders[i]] }));
            else if (f.type === 'SUBSCRIBED') {
              if ((f.data as unknown as string[]).includes(folders[i])) resolve();
              else reject(new Error('not granted'));
            }
          });
        }),
    );
    result.pushConnectSeconds = (Date.now() - tc) / 1000;
    const connectedRss = rssOf(push.pid!);
    const sent = await drive(
      rate,
      seconds,
      (i) =>
        bus.publish([folders[i]], {
          type: 'folder',
          action: 'update',
          data: { uid: folders[i], unreadCount: 1, totalCount: 1, t: performance.now() },
        }),
      n,
    );
    await sleep(1000);
    result.push = { ...figures(lat, sent), idleRssMiB: idleRss.rssMiB, connectedRssMiB: connectedRss.rssMiB, ...rssOf(push.pid!) };
    for (const ws of sockets) ws.terminate();
    await bus.close();
    push.kill('SIGTERM');
    await sleep(500);

    // The peer: a bare ws server on the same core.
    const bare = spawn('taskset', ['-c', '1', process.execPath, '--import', 'tsx', join(ROOT, 'bench/_bare-ws.ts')], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    children.push(bare);
    const barePort = await new Promise<number>((resolve) =>
      bare.stdout!.once('data', (d: Buffer) => resolve((JSON.parse(d.toString()) as { port: number }).port)),
    );
    const bareIdle = rssOf(bare.pid!);
    const bareLat: number[] = [];
    const bareSockets = await openAll(
      n,
      (i) => new WebSocket(`ws://127.0.0.1:${barePort}/?i=${i}`, { perMessageDeflate: false }),
      (ws) =>
        new Promise((resolve, reject) => {
          ws.once('error', reject);
          ws.once('open', () => resolve());
          ws.on('message', (raw) => {
            const f = JSON.parse(raw.toString()) as { data: { data: { t: number } } };
            bareLat.push(performance.now() - f.data.data.t);
          });
        }),
    );
    const pub = new WebSocket(`ws://127.0.0.1:${barePort}/pub`);
    await new Promise((r) => pub.once('open', r));
    const bareSent = await drive(
      rate,
      seconds,
      (i) =>
        pub.send(
          JSON.stringify({
            i,
            frame: JSON.stringify({
              type: 'MESSAGE',
              channel: folders[i],
              data: { type: 'folder', action: 'update', data: { uid: folders[i], unreadCount: 1, totalCount: 1, t: performance.now() } },
            }),
          }),
        ),
      n,
    );
    await sleep(1000);
    result.bareWs = { ...figures(bareLat, bareSent), idleRssMiB: bareIdle.rssMiB, ...rssOf(bare.pid!) };
    for (const ws of [...bareSockets, pub]) ws.terminate();
  } finally {
    for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  }
  return result;
}
