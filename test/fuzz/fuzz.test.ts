// Every fuzz target for a few seconds (FUZZ_CI_SECONDS, default 3), so CI exercises each parser
// and decoder with fresh random inputs on every run; `npm run fuzz` runs them for longer. A finding
// (an exception the code is not designed to throw, a broken invariant, or one input running past
// the hang budget) fails the test with its error and the path of the saved input; the seed in the
// console line replays the run (FUZZ_SEED=<seed> npm run fuzz -- <target>).
import { beforeAll, describe, expect, it } from 'vitest';
import { fuzzTargets, summary, TARGETS, type FuzzOutcome } from './spawn.js';

const SECONDS = Number(process.env.FUZZ_CI_SECONDS ?? 3);
// Above lib/mail parseMail's own limit (5 s + 1 ms per KB): an input it refuses in time is no hang.
const HANG_MS = Number(process.env.FUZZ_HANG_MS ?? 10_000);

describe('fuzz targets (bounded run)', () => {
  // One process runs every target in turn: the product's modules load once (start-up dominates
  // a few seconds of fuzzing); a hang restarts the process for the targets after it.
  let results: FuzzOutcome[] = [];
  beforeAll(
    async () => {
      results = await fuzzTargets(TARGETS, { seconds: SECONDS, hangMs: HANG_MS });
      // eslint-disable-next-line no-console -- the per-target execution counts are the report
      for (const r of results) console.log(summary(r));
    },
    (TARGETS.length * (SECONDS + 30) + 60) * 1000 + HANG_MS,
  );

  it('has one target per parser and decoder under test', () => {
    expect(TARGETS).toEqual(['autodiscover', 'handoff', 'ics', 'key-vault', 'list-query', 'mime', 'rules', 'sanitize', 'vcard']);
  });

  for (const name of TARGETS) {
    it(`${name}: no crash, no broken invariant, no hang`, () => {
      const r = results.find((x) => x.target === name)!;
      expect(r.details.map((d) => `${d.kind}: ${d.error.split('\n').slice(0, 6).join(' | ')} (input ${d.file})`)).toEqual([]);
      expect(r.findings).toBe(0);
      // The run did fuzz: the seed corpus and then generated inputs, some accepted and some refused.
      expect(r.executions).toBeGreaterThan(20);
      expect(r.refused).toBeLessThan(r.executions);
    });
  }
});
