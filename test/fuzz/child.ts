// Fuzz targets in a process of their own (a hang is ended by killing it), one after the other:
//   node --import tsx test/fuzz/child.ts <target> [target ...]     each for FUZZ_SECONDS
//   FUZZ_REPLAY=<file> node --import tsx test/fuzz/child.ts <target>   run one saved input
// Prints a line "FUZZ-RESULT {json}" per target on stdout.
import { readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runEngine } from './engine.js';
import type { FuzzTarget } from './target.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const names = process.argv.slice(2);
if (!names.length || !names.every((n) => /^[a-z0-9-]+$/.test(n))) {
  process.stderr.write('usage: child.ts <target> [target ...]\n');
  process.exit(64);
}
const load = async (name: string) => ((await import(`./targets/${name}.ts`)) as { default: FuzzTarget }).default;

const replay = process.env.FUZZ_REPLAY;
if (replay) {
  const target = await load(names[0]);
  await target.setup?.();
  try {
    await target.fuzz(readFileSync(replay));
    process.stdout.write(`FUZZ-RESULT ${JSON.stringify({ target: target.name, replay, outcome: 'ok' })}\n`);
  } catch (e) {
    const outcome = target.expected(e) ? 'refused' : 'finding';
    process.stdout.write(
      `FUZZ-RESULT ${JSON.stringify({ target: target.name, replay, outcome, error: (e as Error)?.stack ?? String(e) })}\n`,
    );
  } finally {
    await target.teardown?.();
  }
  process.exit(0);
}

const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : Math.floor(Math.random() * 2 ** 31);
for (const name of names) {
  const result = await runEngine(await load(name), {
    seconds: Number(process.env.FUZZ_SECONDS ?? 60),
    seed,
    hangMs: Number(process.env.FUZZ_HANG_MS ?? 10_000),
    corpusDir: join(here, 'corpus', name),
    findingsDir: process.env.FUZZ_FINDINGS_DIR ?? join(tmpdir(), 'svcmail-fuzz-findings'),
  });
  process.stdout.write(`FUZZ-RESULT ${JSON.stringify(result)}\n`);
}
process.exit(0);
