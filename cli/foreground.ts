// `svcmail start --foreground`: every daemon as a child of this terminal. Each child's lines carry its
// name; on a terminal the JSON log lines are shown readably (pino-pretty), otherwise they stay JSON
// for a log collector. Each child reports over its IPC channel once it listens (daemons/shared/run.ts),
// so this process can say where each one answers and when the whole appliance is ready.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { devSecretFile, type Config } from '../lib/config/index.js';
import { DAEMON_NODE_ARGS, DAEMONS } from './daemons.js';
import { configFrom, type GlobalOptions } from './output.js';

// The executables are bin/ at the package root: one folder up from cli/ in a checkout, two from
// dist/cli in the package (/usr/lib/svcmail/bin, not dist/bin).
const BIN = fileURLToPath(new URL('../bin/', import.meta.url).href.replace(/\/dist\/bin\/$/, '/bin/'));

/** The environment variable that asks a daemon to report readiness to its parent over IPC. */
export const FOREGROUND_ENV = 'SVCMAIL_FOREGROUND';

export type LogFormat = 'auto' | 'pretty' | 'json';

/**
 * Development without auth:secret: a random secret kept in data_dir (0600), which the daemons and
 * the CLI then load (lib/config devSecretFile), so `svcmail token` and `svcmail admin` work at once.
 */
function ensureDevSecret(config: Config): void {
  if (config.has('auth:secret') || !['development', 'dev'].includes(config.nodeEnv)) return;
  const file = devSecretFile(config.get('data_dir'));
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  process.stderr.write(
    `development: created ${file}, the token secret the daemons and svcmail token/admin share (svcmail token --user alice)\n`,
  );
}

/**
 * One log line as shown: JSON as it came, or readable on a terminal (non-JSON lines pass through).
 * pino-pretty is loaded only then: a supervisor under pm2 or in a container logs JSON for its life.
 */
export async function lineFormatter(pretty: boolean, colorize: boolean): Promise<(line: string) => string> {
  if (!pretty) return (line) => line;
  const { prettyFactory } = await import('pino-pretty');
  const format = prettyFactory({ colorize, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname,name', singleLine: true });
  return (line) => (line.startsWith('{') ? format(line).replace(/\n$/, '') : line);
}

function prefixLines(stream: NodeJS.ReadableStream, prefix: string, out: NodeJS.WritableStream, format: (line: string) => string): void {
  createInterface({ input: stream }).on('line', (line) => out.write(`${prefix} ${format(line)}\n`));
}

/** A bound address as a URL to open: host:port → http://host:port; a socket path stays a path. */
export const addressUrl = (address: string) => (/^(\[[^\]]+\]|[^/:]+):\d+$/.test(address) ? `http://${address}` : address);

/** The first restart of a daemon that died waits this long; each quick death after it twice as long. */
const RESTART_FIRST_MS = 1000;
const RESTART_MAX_MS = 30_000;
/** A daemon that ran this long before it died starts again from the first delay. */
const RESTART_RESET_AFTER_MS = 60_000;
/** Deaths in a row, each within RESTART_RESET_AFTER_MS of its start, after which everything stops. */
const RESTART_LIMIT = 5;
/** A daemon that exits 78 cannot start with this configuration: starting it again would not help. */
const EX_CONFIG = 78;

interface Restarts {
  quickDeaths: number;
  delayMs: number;
}

/**
 * The next step after a daemon died unasked: restart it after a delay (systemd's Restart= with a
 * growing RestartSec), or stop everything — a configuration it cannot start with (exit 78), or
 * RESTART_LIMIT quick deaths in a row (systemd's start limit).
 */
export function afterDeath(r: Restarts, code: number | null, ranMs: number): { restartInMs: number } | { stop: string } {
  if (code === EX_CONFIG) return { stop: 'it cannot start with this configuration' };
  if (ranMs >= RESTART_RESET_AFTER_MS) Object.assign(r, { quickDeaths: 0, delayMs: RESTART_FIRST_MS });
  r.quickDeaths += 1;
  if (r.quickDeaths > RESTART_LIMIT) return { stop: `it died ${RESTART_LIMIT} times in a row within a minute of starting` };
  const restartInMs = r.delayMs;
  r.delayMs = Math.min(RESTART_MAX_MS, r.delayMs * 2);
  return { restartInMs };
}

/**
 * All daemons (or one) in this terminal; Ctrl-C stops them cleanly. A daemon that dies unasked is
 * started again with back-off and the log says so (under pm2 or in a container the other daemons
 * keep serving); one that cannot start with the configuration, or keeps dying at once, stops them
 * all. Resolves with the exit code.
 */
export async function foreground(g: GlobalOptions, only?: string, logFormat: LogFormat = 'auto'): Promise<number> {
  ensureDevSecret(configFrom(g)); // configFrom fails here, once, with the one-line message, rather than in every child
  const args = [...(g.config ? ['--config', g.config] : []), ...(g.set ?? []).flatMap((s) => ['--set', s])];
  const chosen = DAEMONS.filter((d) => !only || d.name === only);
  const pretty = logFormat === 'pretty' || (logFormat === 'auto' && process.stdout.isTTY === true);
  const children = new Map<string, ChildProcess>();
  const ready = new Map<string, string>();
  const timers = new Set<NodeJS.Timeout>();
  let stopping = false;
  let worst = 0;
  const width = Math.max(...chosen.map((d) => d.name.length));
  const formatLine = await lineFormatter(pretty, pretty && process.stdout.isTTY === true);
  await new Promise<void>((resolve) => {
    const settleIfDone = () => {
      if (stopping && children.size === 0) resolve();
    };
    const stopAll = () => {
      if (stopping) return;
      stopping = true;
      for (const t of timers) clearTimeout(t);
      timers.clear();
      for (const c of children.values()) c.kill('SIGTERM');
      settleIfDone();
    };
    const start = (d: (typeof DAEMONS)[number], restarts: Restarts) => {
      const startedAt = Date.now();
      const child = spawn(process.execPath, [...DAEMON_NODE_ARGS, BIN + d.bin, ...args], {
        stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
        env: { ...process.env, [FOREGROUND_ENV]: '1' },
      });
      children.set(d.name, child);
      const prefix = `[${d.name.padEnd(width)}]`;
      prefixLines(child.stdout!, prefix, process.stdout, formatLine);
      prefixLines(child.stderr!, prefix, process.stderr, (line) => line);
      child.on('message', (m: { svcmail?: string; address?: string }) => {
        if (m?.svcmail !== 'ready' || typeof m.address !== 'string') return;
        const again = ready.has(d.name);
        ready.set(d.name, m.address);
        process.stdout.write(`${prefix} listening on ${addressUrl(m.address)}${again ? ' again' : ''}\n`);
        if (!again && ready.size === chosen.length) process.stdout.write(readyLine(ready));
      });
      child.on('exit', (code, signal) => {
        children.delete(d.name);
        if (stopping) return settleIfDone();
        const next = afterDeath(restarts, code, Date.now() - startedAt);
        const how = signal ?? `code ${code}`;
        if ('stop' in next) {
          process.stderr.write(`${prefix} exited (${how}); stopping the others: ${next.stop}\n`);
          worst = code && code !== 0 ? code : 1;
          return stopAll();
        }
        process.stderr.write(
          `${prefix} exited (${how}); restarting it in ${next.restartInMs / 1000} s (${restarts.quickDeaths} of ${RESTART_LIMIT})\n`,
        );
        const t = setTimeout(() => {
          timers.delete(t);
          if (!stopping) start(d, restarts);
        }, next.restartInMs);
        timers.add(t);
      });
    };
    for (const d of chosen) start(d, { quickDeaths: 0, delayMs: RESTART_FIRST_MS });
    process.on('SIGINT', stopAll);
    process.on('SIGTERM', stopAll);
  });
  return worst;
}

function readyLine(ready: Map<string, string>): string {
  const api = ready.get('api');
  const where = api ? `: the API and pages answer on ${addressUrl(api)}/ (status: ${addressUrl(api)}/api/status)` : '';
  return `svcmail: ready, ${ready.size} daemon${ready.size === 1 ? '' : 's'} running${where}; Ctrl-C stops ${ready.size === 1 ? 'it' : 'them all'}\n`;
}
