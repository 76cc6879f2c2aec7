// The fuzzing engine: a bounded, coverage-less random fuzzer whose inputs are fast-check
// arbitraries — the target's grammar, mutations of the seed corpus and of grammar inputs, and raw
// bytes. Every input runs under a watchdog thread: an input that runs longer than the hang budget
// is written to the findings folder and the process is killed (a hang is a finding). Any exception
// the target does not declare as designed (ApiError validation errors) is a finding too.
// Why not Jazzer.js: see test/fuzz/README.md.
import { createHash } from 'node:crypto';
import { mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import type { FuzzTarget } from './target.js';

export interface EngineOptions {
  seconds: number;
  seed: number;
  /** One input running longer than this is a hang. */
  hangMs: number;
  corpusDir: string;
  findingsDir: string;
}

export interface Finding {
  kind: 'crash' | 'invariant';
  error: string;
  file: string;
}

export interface EngineResult {
  target: string;
  seed: number;
  executions: number;
  /** Inputs the target refused with an error it is designed to throw. */
  refused: number;
  findings: number;
  seconds: number;
  slowestMs: number;
  details: Finding[];
}

const INTERESTING = [0, 9, 10, 13, 32, 34, 37, 39, 44, 58, 59, 60, 61, 62, 64, 92, 127, 128, 0xc0, 0xef, 0xfe, 0xff];

type Mutation =
  | { op: 'flip'; at: number; bit: number }
  | { op: 'byte'; at: number; byte: number }
  | { op: 'erase'; at: number; len: number }
  | { op: 'repeat'; at: number; len: number; times: number }
  | { op: 'insert'; at: number; bytes: Uint8Array }
  | { op: 'splice'; at: number; from: number; other: number; len: number }
  | { op: 'cut'; at: number };

function mutations(dictionary: Buffer[]): fc.Arbitrary<Mutation[]> {
  const at = fc.nat();
  const insert = dictionary.length
    ? fc.oneof(fc.constantFrom(...dictionary), fc.uint8Array({ minLength: 1, maxLength: 16 }))
    : fc.uint8Array({ minLength: 1, maxLength: 16 });
  const one: fc.Arbitrary<Mutation> = fc.oneof(
    fc.record({ op: fc.constant('flip' as const), at, bit: fc.integer({ min: 0, max: 7 }) }),
    fc.record({ op: fc.constant('byte' as const), at, byte: fc.oneof(fc.constantFrom(...INTERESTING), fc.integer({ min: 0, max: 255 })) }),
    fc.record({ op: fc.constant('erase' as const), at, len: fc.integer({ min: 1, max: 256 }) }),
    fc.record({ op: fc.constant('repeat' as const), at, len: fc.integer({ min: 1, max: 128 }), times: fc.integer({ min: 2, max: 64 }) }),
    fc.record({ op: fc.constant('insert' as const), at, bytes: insert }),
    fc.record({ op: fc.constant('splice' as const), at, from: fc.nat(), other: fc.nat(), len: fc.integer({ min: 1, max: 2048 }) }),
    fc.record({ op: fc.constant('cut' as const), at }),
  );
  return fc.array(one, { minLength: 1, maxLength: 8 });
}

function mutate(input: Buffer, ms: Mutation[], pool: Buffer[], max: number): Buffer {
  let b = Buffer.from(input);
  for (const m of ms) {
    const pos = b.length ? m.at % (b.length + 1) : 0;
    switch (m.op) {
      case 'flip':
        if (b.length) b[m.at % b.length] ^= 1 << m.bit;
        break;
      case 'byte':
        if (b.length) b[m.at % b.length] = m.byte;
        break;
      case 'erase':
        b = Buffer.concat([b.subarray(0, pos), b.subarray(pos + m.len)]);
        break;
      case 'repeat': {
        const chunk = b.subarray(pos, pos + m.len);
        b = Buffer.concat([b.subarray(0, pos), ...Array.from({ length: m.times }, () => chunk), b.subarray(pos + m.len)]);
        break;
      }
      case 'insert':
        b = Buffer.concat([b.subarray(0, pos), m.bytes, b.subarray(pos)]);
        break;
      case 'splice': {
        const other = pool.length ? pool[m.other % pool.length] : b;
        const from = other.length ? m.from % other.length : 0;
        b = Buffer.concat([b.subarray(0, pos), other.subarray(from, from + m.len), b.subarray(pos)]);
        break;
      }
      case 'cut':
        b = b.subarray(0, pos);
        break;
    }
    if (b.length > max) b = b.subarray(0, max);
  }
  return b;
}

/** Every input the engine tries, as one fast-check arbitrary. */
export function inputArbitrary(t: FuzzTarget, seeds: Buffer[]): fc.Arbitrary<Buffer> {
  const max = t.maxLength ?? 64 * 1024;
  const dict = t.dictionary.map((s) => Buffer.from(s, 'utf8'));
  const base = seeds.length
    ? fc.oneof({ arbitrary: fc.constantFrom(...seeds), weight: 3 }, { arbitrary: t.generate, weight: 1 })
    : t.generate;
  const mutated = fc.tuple(base, mutations(dict)).map(([b, ms]) => mutate(b, ms, seeds, max));
  return fc.oneof(
    { arbitrary: mutated, weight: 6 },
    { arbitrary: t.generate.map((b) => (b.length > max ? b.subarray(0, max) : b)), weight: 3 },
    { arbitrary: fc.uint8Array({ maxLength: 4096 }).map((u) => Buffer.from(u)), weight: 1 },
  );
}

export function readCorpus(dir: string): Buffer[] {
  try {
    return readdirSync(dir)
      .sort()
      .map((f) => readFileSync(join(dir, f)));
  } catch {
    return [];
  }
}

// Shared with the watchdog: [0] generation, [1] running, [2] input length; float [2] start (ms).
const HEADER = 32;
const WATCHDOG = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const { sab, hangMs, dir, target } = workerData;
const ints = new Int32Array(sab, 0, 4);
const start = new Float64Array(sab, 16, 1);
const sleeper = new Int32Array(new SharedArrayBuffer(4));
for (;;) {
  Atomics.wait(sleeper, 0, 0, 50);
  if (Atomics.load(ints, 1) !== 1) continue;
  const ran = Date.now() - start[0];
  if (ran <= hangMs) continue;
  const len = Atomics.load(ints, 2);
  const input = Buffer.from(new Uint8Array(sab, ${HEADER}, len));
  fs.mkdirSync(dir, { recursive: true });
  const file = dir + '/hang-' + require('node:crypto').createHash('sha1').update(input).digest('hex');
  fs.writeFileSync(file, input);
  fs.writeSync(2, 'FUZZ-HANG ' + JSON.stringify({ target, executions: Atomics.load(ints, 0), ms: ran, file }) + '\\n');
  process.kill(process.pid, 'SIGKILL');
}
`;

function signature(e: unknown): string {
  const err = e instanceof Error ? e : new Error(String(e));
  const frame =
    (err.stack ?? '')
      .split('\n')
      .find((l) => /^\s+at /.test(l))
      ?.trim() ?? '';
  return `${err.name}: ${err.message.split('\n')[0].replace(/\d+/g, 'N').slice(0, 200)} ${frame.replace(/:\d+:\d+\)?$/, '')}`;
}

export async function runEngine(t: FuzzTarget, opts: EngineOptions): Promise<EngineResult> {
  const max = t.maxLength ?? 64 * 1024;
  const seeds = readCorpus(opts.corpusDir).map((b) => (b.length > max ? b.subarray(0, max) : b));
  const sab = new SharedArrayBuffer(HEADER + max);
  const ints = new Int32Array(sab, 0, 4);
  const start = new Float64Array(sab, 16, 1);
  const bytes = new Uint8Array(sab, HEADER, max);
  const dir = join(opts.findingsDir, t.name);
  const watchdog = new Worker(WATCHDOG, { eval: true, workerData: { sab, hangMs: opts.hangMs, dir, target: t.name } });
  watchdog.unref();
  const result: EngineResult = {
    target: t.name,
    seed: opts.seed,
    executions: 0,
    refused: 0,
    findings: 0,
    seconds: 0,
    slowestMs: 0,
    details: [],
  };
  const seen = new Set<string>();
  let unhandled: unknown = null;
  const onUnhandled = (e: unknown) => {
    unhandled = e;
  };
  process.on('unhandledRejection', onUnhandled);

  const record = (input: Buffer, e: unknown, kind: Finding['kind']) => {
    const sig = signature(e);
    if (seen.has(sig)) return;
    seen.add(sig);
    result.findings++;
    mkdirSync(dir, { recursive: true });
    const file = join(dir, `crash-${createHash('sha1').update(input).digest('hex')}`);
    writeFileSync(file, input);
    const error = e instanceof Error ? (e.stack ?? e.message) : String(e);
    result.details.push({ kind, error, file });
    // Said at once: a later hang kills the process before the result line.
    process.stderr.write(`FUZZ-FINDING ${JSON.stringify({ target: t.name, kind, error, file })}\n`);
  };

  const run = async (input: Buffer) => {
    bytes.set(input);
    Atomics.store(ints, 2, input.length);
    start[0] = Date.now();
    Atomics.store(ints, 1, 1);
    const t0 = performance.now();
    try {
      await t.fuzz(input);
    } catch (e) {
      if (t.expected(e)) result.refused++;
      else record(input, e, (e as Error)?.name === 'InvariantError' ? 'invariant' : 'crash');
    } finally {
      Atomics.store(ints, 1, 0);
      Atomics.add(ints, 0, 1);
      result.executions++;
      result.slowestMs = Math.max(result.slowestMs, performance.now() - t0);
    }
    if (unhandled) {
      record(input, unhandled, 'crash');
      unhandled = null;
    }
  };

  // A promise that never settles empties the event loop and Node exits (code 13) without a word:
  // this timer keeps the process up so the watchdog can save the input as a hang.
  const keepAlive = setInterval(() => undefined, 1000);
  await t.setup?.();
  const began = performance.now();
  const deadline = began + opts.seconds * 1000;
  try {
    for (const s of seeds) await run(s);
    const arb = inputArbitrary(t, seeds);
    for (let batch = 0; performance.now() < deadline; batch++) {
      for (const input of fc.sample(arb, { seed: (opts.seed + batch) | 0, numRuns: 50 })) {
        await run(input);
        if (performance.now() >= deadline) break;
      }
    }
  } finally {
    clearInterval(keepAlive);
    await t.teardown?.();
    process.off('unhandledRejection', onUnhandled);
    await watchdog.terminate();
  }
  result.seconds = Math.round((performance.now() - began) / 100) / 10;
  result.slowestMs = Math.round(result.slowestMs);
  return result;
}
