import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import type { Staged } from './_build.js';

/** Stops a daemon the bench started: SIGTERM, SIGKILL after 15 s; resolves once it exited. */
export const stopChild = (c: ChildProcess): Promise<void> =>
  new Promise<void>((r) => {
    if (c.exitCode !== null || c.signalCode !== null) return r();
    const kill = setTimeout(() => c.kill('SIGKILL'), 15_000);
    c.once('exit', () => {
      clearTimeout(kill);
      r();
    });
    c.kill('SIGTERM');
  });

/**
 * Starts a bench server (bench/_<name>.ts, as the stage runs it) on core 0 — the load generator,
 * this process, keeps core 1 — and answers its URL once it printed {"port": n}.
 * BENCH_PROF_DIR=dir writes a V8 CPU profile of it there (node --cpu-prof).
 */
export async function startBenchServer(
  stage: Staged,
  name: string,
  args: string[],
  env: Record<string, string>,
): Promise<{ child: ChildProcess; url: string }> {
  const prof = process.env.BENCH_PROF_DIR ? ['--cpu-prof', `--cpu-prof-dir=${process.env.BENCH_PROF_DIR}`] : [];
  const child = spawn('taskset', ['-c', '0', process.execPath, ...prof, ...stage.entry(name), ...args], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise<string>((resolve, reject) => {
    createInterface({ input: child.stdout! }).once('line', resolve);
    child.once('exit', (c) => reject(new Error(`server exited ${c}`)));
  });
  return { child, url: `http://127.0.0.1:${(JSON.parse(line) as { port: number }).port}` };
}
