// Writes test/durations.json (test/sequencer.ts) from a full run's JSON report:
//   npx vitest run --reporter=default --reporter=json --outputFile=/tmp/vitest.json
//   npx tsx test/write-durations.ts /tmp/vitest.json
import { readFileSync, writeFileSync } from 'node:fs';
import { relative } from 'node:path';

const report = JSON.parse(readFileSync(process.argv[2] ?? '', 'utf8')) as {
  testResults: Array<{ name: string; startTime: number; endTime: number }>;
};
const seconds = Object.fromEntries(
  report.testResults
    .map((r) => [relative(process.cwd(), r.name), Math.round((r.endTime - r.startTime) / 1000)] as const)
    .sort((a, b) => b[1] - a[1]),
);
const note = 'Seconds each test file took in a full run (test/write-durations.ts); test/sequencer.ts starts the longest first.';
writeFileSync(new URL('./durations.json', import.meta.url), `${JSON.stringify({ note, seconds }, null, 1)}\n`);
process.stdout.write(`${Object.keys(seconds).length} files written to test/durations.json\n`);
