// The appliance as it runs — `svcmail start --foreground`, the four daemons as separate processes
// on loopback ports, no scanners (the test-mode clean fallback), a DNS server on loopback as its
// resolver (nothing it looks up leaves the machine) — with the calls tests make of it: the API as a
// user, and a hand-off through /internal/mta as the MTA makes it.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { signToken } from '../../lib/auth/index.js';
import { loadConfig, type Config } from '../../lib/config/index.js';
import { CLI, ROOT, freeListenSettings } from '../integration/appliance/helpers.js';
import { startDnsServer } from './dns-server.js';
import { freePort } from './scanners.js';

const SECRET = 'running-appliance-secret-0123456789ab';
const INGEST = 'running-appliance-ingest-0123456789';

export interface RunningAppliance {
  /** The api daemon's base URL (its front door also forwards /push and the protocol paths). */
  api: string;
  dir: string;
  config: Config;
  /** The daemons' last output, for failure messages. */
  output(): string;
  token(uid: string, opts?: { roles?: string[]; elevated?: boolean }): Promise<string>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- bodies are checked field by field
  call(token: string, method: string, path: string, body?: unknown): Promise<{ status: number; body: any }>;
  /** Hands a message to /internal/mta as the MTA does (202 expected). */
  handOff(to: string, raw: string, from?: string): Promise<void>;
  /** Resolves with what `probe` answers once it answers something, or fails after `ms` with the daemons' output. */
  until<T>(what: string, probe: () => Promise<T | undefined>, ms?: number): Promise<T>;
  stop(): void;
}

export async function startRunningAppliance(values: Record<string, unknown> = {}): Promise<RunningAppliance> {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-running-'));
  const listen = await freeListenSettings();
  const dns = await startDnsServer(); // NXDOMAIN for every name
  const file = join(dir, 'svcmail.conf');
  const settings: Record<string, unknown> = {
    ...listen,
    data_dir: join(dir, 'data'),
    'auth:secret': SECRET,
    'mail:transport:ingest:secret': INGEST,
    'mail:dev_auto_login:enabled': false,
    'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`, // no scanner: the test-mode clean fallback
    'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
    'mail:jobs:scan:interval_seconds': 1,
    'mail:dns:nameservers': [dns.address],
    'log:level': 'warn',
    ...values,
  };
  writeFileSync(file, JSON.stringify(settings));
  // The environment outranks svcmail.conf: settings the test runner exports (vitest.config.ts) do
  // not reach the daemons where this file sets them.
  const env = Object.fromEntries(
    Object.entries(process.env).filter(([k]) => !(k.startsWith('SVCMAIL__') && k.slice(9).split('__').join(':') in settings)),
  );
  const api = `http://${listen['listen:api']}`;
  let out = '';
  const child: ChildProcess = spawn(process.execPath, [CLI, 'start', '--foreground', '--config', file], {
    cwd: ROOT,
    env: { ...env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  child.stdout!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  child.stderr!.on('data', (d: Buffer) => (out = (out + d.toString()).slice(-20_000)));
  const stop = () => {
    if (child.exitCode === null) process.kill(-child.pid!, 'SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    void dns.close();
  };
  for (const until = Date.now() + 150_000; !/svcmail: ready, 4 daemons running/.test(out);) {
    if (child.exitCode !== null || Date.now() > until) {
      stop();
      throw new Error(`the appliance did not start: ${out}`);
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  const config = loadConfig({ file, env: { NODE_ENV: 'test' } });
  return {
    api,
    dir,
    config,
    output: () => out,
    token: (uid, opts = {}) => signToken(config, { uid, ...opts }),
    async call(token, method, path, body) {
      const res = await fetch(`${api}${path}`, {
        method,
        headers: { authorization: `Bearer ${token}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        body: body ? JSON.stringify(body) : undefined,
      });
      const text = await res.text();
      return { status: res.status, body: text ? JSON.parse(text) : null };
    },
    async handOff(to, raw, from = 'carol@example.net') {
      const r = await fetch(`${api}/internal/mta/deliver`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${INGEST}`,
          'content-type': 'message/rfc822',
          'x-envelope-from': encodeURIComponent(from),
          'x-envelope-to': encodeURIComponent(to),
        },
        body: raw,
      });
      if (r.status !== 202) throw new Error(`hand-off answered ${r.status}: ${await r.text()}`);
    },
    async until(what, probe, ms = 30_000) {
      for (const end = Date.now() + ms; Date.now() < end;) {
        const v = await probe();
        if (v !== undefined) return v;
        await new Promise((r) => setTimeout(r, 200));
      }
      throw new Error(`${what} did not happen within ${ms} ms\n${out}`);
    },
    stop,
  };
}
