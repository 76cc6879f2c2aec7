// Heartbeats of the real daemon processes (api, push, worker) on one SQLite database: diagnostics
// and /api/metrics see each process and the push daemon's open sockets; svcmail doctor's worker
// check follows the worker through a clean stop and a kill.
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { listHeartbeats } from '../../../lib/settings/index.js';
import { loadConfig } from '../../../lib/config/index.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { checkWorker } from '../../../lib/setup/doctor/remote-checks.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import type { Store } from '../../../lib/storage/index.js';
import { Client, freePort, seed, startStack, type Stack } from '../push/_stack.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

async function until<T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

function sample(text: string, name: string, label: string): number | null {
  const m = new RegExp(`^${name}\\{[^}]*${label}[^}]*\\} (\\S+)$`, 'm').exec(text);
  return m ? Number(m[1]) : null;
}

describe('daemon heartbeats (real api, push and worker processes)', () => {
  let stack: Stack;
  let store: Store;
  let people: Awaited<ReturnType<typeof seed>>;
  let worker: ChildProcess | null = null;
  const startWorker = async () => {
    const child = spawn(
      process.execPath,
      [join(ROOT, 'bin/svcmail-worker.js'), '--config', stack.configFile, '--set', `mail:jobs:wake_address=127.0.0.1:${await freePort()}`],
      { cwd: ROOT, env: { ...process.env, NODE_ENV: 'test', NOTIFY_SOCKET: '' }, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    child.stderr!.on('data', (d: Buffer) => {
      out += d.toString();
    });
    await until(
      'a worker heartbeat',
      async () => (await listHeartbeats(store, { daemon: 'worker' })).find((h) => h.pid === child.pid && !h.stoppedAt),
      45_000,
    ).catch((e: Error) => {
      throw new Error(`${e.message}: ${out}`);
    });
    return child;
  };
  const exited = (c: ChildProcess) =>
    new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));

  beforeAll(async () => {
    stack = await startStack({ copies: 1, values: { 'mail:heartbeat:interval_seconds': 1 } });
    people = await seed(stack);
    const config = loadConfig({ file: stack.configFile, env: { NODE_ENV: 'test' } });
    store = await openSqlStore({ url: config.get('datastores:sql:url'), models: productModels(productRegistry()), synchronize: false });
  }, 60_000);
  afterAll(async () => {
    if (worker && worker.exitCode === null) worker.kill('SIGKILL');
    await store?.close();
    await stack?.close();
  });

  it('diagnostics and metrics show each live process and the open /push sockets', async () => {
    const ws = await Client.open(stack.push[0].url, { token: people.alice });
    const ws2 = await Client.open(stack.push[0].url, { token: people.bob });
    try {
      await until('two connections in the push heartbeat', async () =>
        (await listHeartbeats(store, { daemon: 'push' })).find((h) => h.details.connections === 2),
      );
      const m = await fetch(`${stack.api.url}/api/metrics`, { headers: { authorization: `Bearer ${people.admin}` } });
      expect(m.status).toBe(200);
      const text = await m.text();
      expect(sample(text, 'svcmail_push_connections', `instance="[^"]+:${stack.push[0].child.pid}"`)).toBe(2);
      expect(sample(text, 'svcmail_daemon_processes', 'kind="api"')).toBe(1);
      expect(sample(text, 'svcmail_daemon_processes', 'kind="push"')).toBe(1);
      const d = await stack.call('GET', '/api/admin/diagnostics', people.admin);
      const push = d.body.daemons.find((x: { daemon: string }) => x.daemon === 'push');
      expect(push).toMatchObject({ alive: 1, processes: [{ pid: stack.push[0].child.pid, alive: true, details: { connections: 2 } }] });
      expect(d.body.daemons.find((x: { daemon: string }) => x.daemon === 'api')).toMatchObject({
        alive: 1,
        processes: [{ pid: stack.api.child.pid }],
      });
    } finally {
      ws.close();
      ws2.close();
    }
    await until('no connections in the push heartbeat', async () =>
      (await listHeartbeats(store, { daemon: 'push' })).find((h) => h.details.connections === 0),
    );
  }, 40_000);

  it("svcmail doctor's worker check: ok while it beats, fail after a clean stop, fail after a kill once three periods pass", async () => {
    const ctx = { config: loadConfig({ file: stack.configFile, env: { NODE_ENV: 'test' } }), explicit: new Set<never>() };
    expect(await checkWorker(ctx)).toMatchObject({ status: 'warn' });
    worker = await startWorker();
    expect(await checkWorker(ctx)).toMatchObject({ status: 'ok', detail: expect.stringContaining(`:${worker.pid}: heartbeat`) });
    const diag = await stack.call('GET', '/api/admin/diagnostics', people.admin);
    expect(diag.body.daemons.find((x: { daemon: string }) => x.daemon === 'worker')).toMatchObject({ alive: 1 });
    worker.kill('SIGTERM');
    await exited(worker);
    expect(await checkWorker(ctx)).toMatchObject({
      status: 'fail',
      detail: expect.stringMatching(new RegExp(`:${worker.pid} stopped at`)),
    });

    worker = await startWorker();
    worker.kill('SIGKILL');
    await exited(worker);
    const killed = worker.pid;
    const r = await until(
      'the killed worker to count as down',
      async () => {
        const c = await checkWorker(ctx);
        return c && !Array.isArray(c) && c.status === 'fail' ? c : null;
      },
      10_000,
    );
    expect(r.detail).toMatch(new RegExp(`last heartbeat from [^ ]+:${killed} \\d+ s ago \\(more than 3 periods of 1 s\\)`));
  }, 120_000);
});
