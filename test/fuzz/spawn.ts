// Runs fuzz targets in a child process and reads their results (shared by `npm run fuzz` and the test).
import { spawn } from 'node:child_process';
import { readdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { EngineResult, Finding } from './engine.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const root = fileURLToPath(new URL('../..', import.meta.url));

/** Every target: one file per parser or decoder under targets/. */
export const TARGETS = readdirSync(`${here}targets`)
  .filter((f) => f.endsWith('.ts'))
  .map((f) => f.slice(0, -3))
  .sort();

export type FuzzOutcome = EngineResult & { hang: boolean };

const lines = (text: string, tag: string) =>
  text
    .split('\n')
    .filter((l) => l.startsWith(`${tag} `))
    .map((l) => JSON.parse(l.slice(tag.length + 1)) as Record<string, unknown>);

/**
 * Runs the targets one after the other in one process, `seconds` each, and answers a result per
 * target. A hang kills the process: the target then running gets the hang as a finding, and the
 * targets after it are run again in a fresh process.
 */
export async function fuzzTargets(names: string[], opts: { seconds: number; hangMs: number; seed?: number }): Promise<FuzzOutcome[]> {
  const out: FuzzOutcome[] = [];
  let todo = [...names];
  while (todo.length) {
    // The seed is chosen here so that a run killed by a hang can still be replayed.
    const seed = opts.seed ?? Math.floor(Math.random() * 2 ** 31);
    const { stdout, stderr, code, signal } = await runChild(todo, { ...opts, seed });
    const done = lines(stdout, 'FUZZ-RESULT').map((r) => ({ ...(r as unknown as EngineResult), hang: false }));
    out.push(...done);
    todo = todo.slice(done.length);
    if (!todo.length) break;
    const [current] = todo;
    const hang = lines(stderr, 'FUZZ-HANG').find((h) => h.target === current) as
      { executions: number; ms: number; file: string } | undefined;
    const earlier = lines(stderr, 'FUZZ-FINDING').filter((f) => f.target === current) as unknown as Finding[];
    const ended: Finding = {
      kind: 'crash',
      error: hang
        ? `hang: one input ran over ${opts.hangMs} ms`
        : `the fuzz process ended (code ${code}, signal ${signal}): ${stderr.slice(-2000)}`,
      file: hang?.file ?? '',
    };
    const details = [...earlier, ended];
    out.push({
      target: current,
      seed,
      executions: hang?.executions ?? 0,
      refused: 0,
      findings: details.length,
      seconds: opts.seconds,
      slowestMs: hang?.ms ?? 0,
      hang: Boolean(hang),
      details,
    });
    todo = todo.slice(1);
  }
  return out;
}

function runChild(
  names: string[],
  opts: { seconds: number; hangMs: number; seed: number },
): Promise<{ stdout: string; stderr: string; code: number | null; signal: NodeJS.Signals | null }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', `${here}child.ts`, ...names], {
      cwd: root,
      env: { ...process.env, FUZZ_SECONDS: String(opts.seconds), FUZZ_HANG_MS: String(opts.hangMs), FUZZ_SEED: String(opts.seed) },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString();
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString();
    });
    // Start-up, the runs, one hang budget and a margin; past that the child itself is stuck.
    const guard = setTimeout(() => child.kill('SIGKILL'), (names.length * (opts.seconds + 30) + 60) * 1000 + opts.hangMs);
    child.on('error', reject);
    child.on('close', (code, signal) => {
      clearTimeout(guard);
      resolve({ stdout, stderr, code, signal });
    });
  });
}

/** The console line per target. */
export const summary = (r: FuzzOutcome): string =>
  `fuzz ${r.target}: executions ${r.executions}, findings ${r.findings}, refused ${r.refused}, slowest ${r.slowestMs} ms, seed ${r.seed}, ${r.seconds} s`;
