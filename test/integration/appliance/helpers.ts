import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { schema } from '../../../lib/config/index.js';
import { freePort } from '../../helpers/scanners.js';
import { startSigninDouble } from '../../helpers/signin-double.js';

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
export const CLI = join(ROOT, 'bin/svcmail.js');
export const SECRET = 'appliance-test-secret-0123456789';

/** Production rules (no development auto-login, secrets checked) for the CLI and the daemons. */
export const PROD_ENV = { ...process.env, NODE_ENV: 'production', SVCMAIL_CONFIG: '' };

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- parsed CLI output, checked field by field
  json: () => any;
}

/** Runs `svcmail …` as a real process. */
export function svcmail(args: string[], env: NodeJS.ProcessEnv = {}): Promise<CliRun> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...PROD_ENV, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr, json: () => JSON.parse(stdout) }));
  });
}

export function setupArgs(dir: string, authUrl: string, extra: string[] = []): string[] {
  return [
    '--config',
    join(dir, 'svcmail.conf'),
    'setup',
    '--non-interactive',
    '--domain',
    'example.test',
    '--host',
    'mail.example.test',
    '--auth-url',
    authUrl,
    '--auth-secret',
    SECRET,
    '--auth-issuer',
    'auth.example.test',
    ...extra,
  ];
}

/** sha256 of every file under dir (relative path → hash), to prove a re-run changed nothing. */
export function hashTree(dir: string, skip: RegExp = /\.sqlite/): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      const p = join(d, e.name);
      if (skip.test(p)) continue;
      if (e.isDirectory()) walk(p);
      else
        out[p.slice(dir.length)] =
          `${(statSync(p).mode & 0o777).toString(8)}:${createHash('sha256').update(readFileSync(p)).digest('hex')}`;
    }
  };
  walk(dir);
  return out;
}

export const mode = (file: string) => (statSync(file).mode & 0o777).toString(8);

/**
 * The sign-in service for the doctor checks: the shared test double (test/helpers/signin-double.ts)
 * with user alice and her app password. Any answer below 500 carries the Date header doctor reads.
 */
export async function startSignin(opts: {
  secret: string;
  audience: string;
  issuer: string;
  password?: string;
}): Promise<{ url: string; close(): Promise<void> }> {
  return startSigninDouble({
    users: { alice: { passwords: [opts.password ?? 'app-password'] } },
    secret: opts.secret,
    audience: opts.audience,
    issuer: opts.issuer,
  });
}

/** The real api daemon (bin/svcmail-api.js) on the given config; resolves once /api/status answers. */
export function startApiDaemon(configFile: string, port: number, env: NodeJS.ProcessEnv = {}): Promise<RunningDaemon> {
  return startDaemon('api', configFile, port, { env });
}

/** The real push daemon (bin/svcmail-push.js); resolves once /push/status answers. */
export function startPushDaemon(configFile: string, port: number, set: string[] = []): Promise<RunningDaemon> {
  return startDaemon('push', configFile, port, { set });
}

export interface RunningDaemon {
  child: ChildProcess;
  url: string;
  stop(): Promise<void>;
  output: () => string;
}

/** A daemon as a real process (`bin` defaults to this checkout's bin/svcmail-<name>.js): --config, listen:<name>, --set flags. */
export function startDaemon(
  name: 'api' | 'push' | 'protocols',
  configFile: string,
  port: number,
  opts: { env?: NodeJS.ProcessEnv; set?: string[]; bin?: string } = {},
): Promise<RunningDaemon> {
  const url = `http://127.0.0.1:${port}`;
  const status = () =>
    fetch(`${url}/${name}/status`).then(
      (r) => r.status === 200,
      () => false,
    );
  return spawnDaemon(
    name,
    opts.bin ?? join(ROOT, `bin/svcmail-${name}.js`),
    [`listen:${name}=127.0.0.1:${port}`, ...(opts.set ?? [])],
    configFile,
    url,
    status,
    opts.env,
  );
}

/** The real protocols daemon (bin/svcmail-protocols.js); resolves once /protocols/status answers. */
export function startProtocolsDaemon(configFile: string, port: number, set: string[] = []): Promise<RunningDaemon> {
  return startDaemon('protocols', configFile, port, { set });
}

/**
 * The real worker daemon (bin/svcmail-worker.js) with its wake-up listener on `wakePort`; resolves
 * once that answers (the worker has no status route: any HTTP answer there means it runs).
 */
export function startWorkerDaemon(configFile: string, wakePort: number, set: string[] = []): Promise<RunningDaemon> {
  const url = `http://127.0.0.1:${wakePort}`;
  const answers = () =>
    fetch(`${url}/wake`).then(
      () => true,
      () => false,
    );
  return spawnDaemon(
    'worker',
    join(ROOT, 'bin/svcmail-worker.js'),
    [`mail:jobs:wake_address=127.0.0.1:${wakePort}`, ...set],
    configFile,
    url,
    answers,
  );
}

/** Spawns a daemon with --config and --set flags (log:level=warn) and resolves once `ready` says so, within 30 s. */
async function spawnDaemon(
  name: string,
  bin: string,
  set: string[],
  configFile: string,
  url: string,
  ready: () => Promise<boolean>,
  env: NodeJS.ProcessEnv = {},
): Promise<RunningDaemon> {
  const flags = ['--config', configFile, ...['log:level=warn', ...set].flatMap((x) => ['--set', x])];
  const child = spawn(process.execPath, [bin, ...flags], {
    env: { ...PROD_ENV, NOTIFY_SOCKET: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += d));
  child.stderr!.on('data', (d) => (output += d));
  const until = Date.now() + 30_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} daemon exited ${child.exitCode}: ${output}`);
    if (await ready()) break;
    if (Date.now() > until) throw new Error(`${name} daemon not ready: ${output}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  const stop = () =>
    new Promise<void>((r) => {
      if (child.exitCode !== null) return r();
      child.once('exit', () => r());
      child.kill('SIGTERM');
    });
  return { child, url, output: () => output, stop };
}

/** Kills a daemon without letting it stop cleanly (a crash: its heartbeat is left without a stop). */
export function crash(d: RunningDaemon): Promise<void> {
  return new Promise((r) => {
    if (d.child.exitCode !== null || d.child.signalCode !== null) return r();
    d.child.once('exit', () => r());
    d.child.kill('SIGKILL');
  });
}

/** Polls `probe` until it answers something `done` accepts; the last answer either way. */
export async function pollUntil<T>(probe: () => Promise<T>, done: (v: T) => boolean, timeoutMs = 30_000, everyMs = 250): Promise<T> {
  const until = Date.now() + timeoutMs;
  let v = await probe();
  while (!done(v) && Date.now() < until) {
    await new Promise((r) => setTimeout(r, everyMs));
    v = await probe();
  }
  return v;
}

export const openssl = (args: string[]) => spawnSync('openssl', args, { encoding: 'utf8' });

/**
 * Every setting whose default is an address on 127.0.0.1 (listen:*, the worker's wake address) on a
 * free port of `ip` instead: a whole appliance that collides with nothing, on an address of its own.
 */
export async function freeListenSettings(ip = '127.0.0.1'): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const [name, decl] of Object.entries(schema)) {
    const d = (decl as { default?: unknown }).default;
    if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) out[name] = `${ip}:${await freePort()}`;
  }
  return out;
}
