import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';
import { devSecretFile, type Config } from '../../lib/config/index.js';
import { DAEMONS } from '../daemons.js';
import { CliError, configFrom, EXIT, type GlobalOptions } from '../output.js';
import { supervise } from './supervise.js';

// The executables are bin/ at the package root: two folders up from cli/commands in a checkout,
// three from dist/cli/commands in the package (/usr/lib/svcmail/bin, not dist/bin).
const BIN = fileURLToPath(new URL('../../bin/', import.meta.url).href.replace(/\/dist\/bin\/$/, '/bin/'));

function prefixLines(stream: NodeJS.ReadableStream, prefix: string, out: NodeJS.WritableStream): void {
  createInterface({ input: stream }).on('line', (line) => out.write(`${prefix} ${line}\n`));
}

/**
 * Development without auth:secret: a random secret kept in data_dir (0600), which the daemons and
 * the CLI then load (lib/config devSecretFile), so `svcmail token` and `svcmail admin` work at once.
 */
function ensureDevSecret(config: Config): void {
  if (config.has('auth:secret') || !['development', 'dev'].includes(config.nodeEnv)) return;
  const file = devSecretFile(config.get('data_dir'));
  mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  writeFileSync(file, `${randomBytes(32).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  process.stderr.write(`development: created ${file}, the token secret the daemons and svcmail token/admin share (svcmail token --user alice)\n`);
}

/** All daemons in this terminal, logs prefixed with the daemon's name; Ctrl-C stops them cleanly. */
async function foreground(g: GlobalOptions, only?: string): Promise<number> {
  ensureDevSecret(configFrom(g)); // configFrom fails here, once, with the one-line message, rather than in every child
  const args = [...(g.config ? ['--config', g.config] : []), ...(g.set ?? []).flatMap((s) => ['--set', s])];
  const chosen = DAEMONS.filter((d) => !only || d.name === only);
  const children = new Map<string, ChildProcess>();
  let stopping = false;
  let worst = 0;
  const width = Math.max(...chosen.map((d) => d.name.length));
  await new Promise<void>((resolve) => {
    const stopAll = () => {
      if (stopping) return;
      stopping = true;
      for (const c of children.values()) c.kill('SIGTERM');
    };
    for (const d of chosen) {
      const child = spawn(process.execPath, [BIN + d.bin, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
      children.set(d.name, child);
      const prefix = `[${d.name.padEnd(width)}]`;
      prefixLines(child.stdout!, prefix, process.stdout);
      prefixLines(child.stderr!, prefix, process.stderr);
      child.on('exit', (code, signal) => {
        children.delete(d.name);
        if (!stopping) {
          process.stderr.write(`${prefix} exited (${signal ?? `code ${code}`}); stopping the others\n`);
          worst = code && code !== 0 ? code : 1;
          stopAll();
        }
        if (children.size === 0) resolve();
      });
    }
    process.on('SIGINT', stopAll);
    process.on('SIGTERM', stopAll);
  });
  return worst;
}

export function registerStart(program: Command): void {
  program.command('start [daemon]')
    .description('start the daemons (all, or one of api, worker, push, protocols) under systemd, else pm2; --foreground runs them in this terminal')
    .option('--foreground', 'run in this terminal with prefixed logs; Ctrl-C stops everything cleanly')
    .action(async (daemon: string | undefined, opts: { foreground?: boolean }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (opts.foreground) {
        if (daemon && !DAEMONS.some((d) => d.name === daemon)) throw new CliError(`unknown daemon ${daemon}; one of ${DAEMONS.map((d) => d.name).join(', ')}`, EXIT.usage);
        process.exitCode = await foreground(g, daemon);
        return;
      }
      supervise('start', daemon, g);
    });
}
