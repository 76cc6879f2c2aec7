import { freePort } from '../../helpers/ports.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import WebSocket from 'ws';
import { signToken, type SignOptions } from '../../../lib/auth/index.js';
import { loadConfig, type Config } from '../../../lib/config/index.js';

export const SECRET = 'push-test-secret-0123456789abcdef';
export const ORIGIN = 'https://mail.test';
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

async function waitFor(url: string, child: ChildProcess, log: () => string, ms = 30_000): Promise<void> {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    if (child.exitCode !== null) throw new Error(`daemon exited (${child.exitCode}): ${log()}`);
    try {
      const r = await fetch(url);
      if (r.ok) return;
    } catch {
      /* not yet */
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`${url} not ready: ${log()}`);
}

export interface Daemon {
  child: ChildProcess;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

/** Spawns a real daemon process (bin/svcmail-<name>.js) with --config and --set flags. */
export async function spawnDaemon(
  name: 'api' | 'push',
  configFile: string,
  set: string[],
  readyPath: string,
  port: number,
): Promise<Daemon> {
  const args = [join(ROOT, `bin/svcmail-${name}.js`), '--config', configFile, ...set.flatMap((s) => ['--set', s])];
  const child = spawn(process.execPath, args, {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', NOTIFY_SOCKET: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  });
  child.stderr!.on('data', (d: Buffer) => {
    out = (out + d.toString()).slice(-20_000);
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(url + readyPath, child, () => out);
  return {
    child,
    url,
    output: () => out,
    stop: () =>
      new Promise<void>((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once('exit', () => resolve());
        child.kill('SIGTERM');
        setTimeout(() => child.kill('SIGKILL'), 5000).unref();
      }),
  };
}

export interface Stack {
  dir: string;
  config: Config;
  configFile: string;
  api: Daemon;
  push: Daemon[];
  token(opts: Partial<SignOptions> & { uid: string }): Promise<string>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
  call(method: string, path: string, token: string, body?: unknown): Promise<{ status: number; body: any }>;
  close(): Promise<void>;
}

/** An api daemon and `copies` push daemons sharing a fresh SQLite database and one event channel. */
export async function startStack(opts: { copies: number; redisUrl?: string; values?: Record<string, unknown> }): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'svcpush-'));
  const apiPort = await freePort();
  const pushPorts = await Promise.all(Array.from({ length: opts.copies }, () => freePort()));
  const values: Record<string, unknown> = {
    data_dir: dir,
    'datastores:sql:url': `sqlite:${join(dir, 'db.sqlite')}`,
    'log:level': 'warn',
    'auth:secret': SECRET,
    'auth:options:audience': 'mail.test',
    'auth:options:issuer': 'auth.mail.test',
    'mail:dev_auto_login:enabled': false,
    'cors:origins': [ORIGIN],
    'mail:jobs:wake_address': '',
    'listen:api': `127.0.0.1:${apiPort}`,
    'listen:push': `127.0.0.1:${pushPorts[0]}`,
    ...(opts.redisUrl ? { 'redis:url': opts.redisUrl, 'redis:prefix': `svcmail-test-${randomBytes(4).toString('hex')}:` } : {}),
    ...opts.values,
  };
  const configFile = join(dir, 'svcmail.json');
  writeFileSync(configFile, JSON.stringify(values));
  const config = loadConfig({ file: configFile, env: { NODE_ENV: 'test' } });
  const api = await spawnDaemon('api', configFile, [], '/api/status', apiPort);
  const push: Daemon[] = [];
  for (const port of pushPorts) push.push(await spawnDaemon('push', configFile, [`listen:push=127.0.0.1:${port}`], '/push/status', port));
  return {
    dir,
    config,
    configFile,
    api,
    push,
    token: (o) => signToken(config, o),
    async call(method, path, token, body) {
      const headers: Record<string, string> = { authorization: `Bearer ${token}` };
      if (body !== undefined) headers['content-type'] = 'application/json';
      const r = await fetch(api.url + path, { method, headers, body: body === undefined ? undefined : JSON.stringify(body) });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : null };
    },
    async close() {
      await Promise.all(push.map((d) => d.stop()));
      await api.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** Admin, alice and bob; a mailbox each; their folders by role. */
export async function seed(stack: Stack) {
  const admin = await stack.token({ uid: 'root', roles: ['admin'], elevated: true });
  const alice = await stack.token({ uid: 'alice' });
  const bob = await stack.token({ uid: 'bob' });
  const d = await stack.call('POST', '/api/mail/domains', admin, { name: 'example.test', verified: true });
  if (d.status !== 201) throw new Error(`seed domain: ${d.status} ${JSON.stringify(d.body)}`);
  const box = async (owner: string) => {
    const r = await stack.call('POST', '/api/mail/mailboxes', admin, { address: `${owner}@example.test`, owners: [owner], name: owner });
    if (r.status !== 201) throw new Error(`seed mailbox: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body.uid as string;
  };
  const aliceBox = await box('alice');
  const bobBox = await box('bob');
  const inboxOf = async (token: string, mailboxUid: string) => {
    const r = await stack.call('GET', `/api/mail/folders?mailboxUid=${mailboxUid}&role=inbox`, token);
    if (r.status !== 200 || r.body.length !== 1) throw new Error(`inbox: ${r.status} ${JSON.stringify(r.body)}`);
    return r.body[0] as { uid: string; version: number; unreadCount: number; totalCount: number };
  };
  return { admin, alice, bob, aliceBox, bobBox, aliceInbox: await inboxOf(alice, aliceBox), bobInbox: await inboxOf(bob, bobBox) };
}

export interface Frame {
  id?: number;
  type: string;
  channel?: string;
  data?: unknown;
}

/** A real ws client that keeps every frame and can wait for one. */
export class Client {
  readonly frames: Frame[] = [];
  readonly #waiters: Array<{ test: (f: Frame) => boolean; resolve: (f: Frame) => void }> = [];
  readonly closed: Promise<{ code: number; reason: string }>;
  readonly opened: Promise<void>;
  #id = 0;

  constructor(readonly ws: WebSocket) {
    ws.on('message', (raw) => {
      const f = JSON.parse(raw.toString()) as Frame;
      this.frames.push(f);
      for (const w of [...this.#waiters])
        if (w.test(f)) {
          this.#waiters.splice(this.#waiters.indexOf(w), 1);
          w.resolve(f);
        }
    });
    this.closed = new Promise((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
    this.opened = new Promise((resolve, reject) => {
      ws.once('open', () => resolve());
      ws.once('error', reject);
      ws.once('unexpected-response', (_req, res) => reject(new Error(`HTTP ${res.statusCode}`)));
    });
    this.opened.catch(() => undefined);
  }

  static async open(baseUrl: string, opts: { token?: string; cookie?: string; origin?: string | null } = {}): Promise<Client> {
    const headers: Record<string, string> = {};
    if (opts.token) headers.authorization = `Bearer ${opts.token}`;
    if (opts.cookie) headers.cookie = `jwt=${opts.cookie}`;
    const origin = opts.origin === undefined ? ORIGIN : opts.origin;
    const ws = new WebSocket(`${baseUrl.replace(/^http/, 'ws')}/push`, { headers, ...(origin ? { origin } : {}) });
    const c = new Client(ws);
    await c.opened;
    return c;
  }

  /** Waits for a matching frame. The default allows for a loaded CI machine (a full suite on 2 cores); negative checks pass their own short wait. */
  next(test: (f: Frame) => boolean, ms = 15_000): Promise<Frame> {
    const hit = this.frames.find(test);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const w = { test, resolve };
      this.#waiters.push(w);
      setTimeout(() => {
        const i = this.#waiters.indexOf(w);
        if (i >= 0) {
          this.#waiters.splice(i, 1);
          reject(new Error(`no matching frame within ${ms} ms; got ${JSON.stringify(this.frames)}`));
        }
      }, ms);
    });
  }

  send(frame: unknown): void {
    this.ws.send(JSON.stringify(frame));
  }

  async subscribe(uids: string[]): Promise<string[]> {
    const id = ++this.#id;
    this.send({ id, type: 'SUBSCRIBE', data: uids });
    const f = await this.next((x) => x.id === id && x.type === 'SUBSCRIBED');
    return f.data as string[];
  }

  close(): void {
    this.ws.terminate();
  }
}

export { freePort };
