// npm run fuzz [-- target ...]: every target (or those named) for FUZZ_SECONDS each (default 60),
// one after the other, each in its own process. FUZZ_HANG_MS (default 10 000) is the hang budget of
// one input, FUZZ_SEED replays a run, FUZZ_FINDINGS_DIR keeps the inputs that crashed or hung.
// Exits 1 on any finding. To run one saved input: FUZZ_REPLAY=<file> node --import tsx test/fuzz/child.ts <target>
import { fuzzTargets, summary, TARGETS } from './spawn.js';

const asked = process.argv.slice(2);
const unknown = asked.filter((t) => !TARGETS.includes(t));
if (unknown.length) {
  process.stderr.write(`unknown fuzz target(s) ${unknown.join(', ')}; targets: ${TARGETS.join(', ')}\n`);
  process.exit(64);
}
const seconds = Number(process.env.FUZZ_SECONDS ?? 60);
const hangMs = Number(process.env.FUZZ_HANG_MS ?? 10_000);
const seed = process.env.FUZZ_SEED ? Number(process.env.FUZZ_SEED) : undefined;
let findings = 0;
let executions = 0;
// One process per target: long runs keep each target's memory and findings apart.
for (const name of asked.length ? asked : TARGETS) {
  const [r] = await fuzzTargets([name], { seconds, hangMs, seed });
  findings += r.findings;
  executions += r.executions;
  process.stdout.write(`${summary(r)}\n`);
  for (const d of r.details)
    process.stdout.write(`  ${d.kind} (input ${d.file || 'not saved'}):\n    ${d.error.split('\n').slice(0, 12).join('\n    ')}\n`);
}
process.stdout.write(`fuzz total: executions ${executions}, findings ${findings}\n`);
process.exit(findings ? 1 : 0);
