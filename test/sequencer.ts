// The order test files start in. Vitest runs two at a time (vitest.config.ts); started longest
// first, the two forks finish close together, while a long file started last keeps one fork busy
// alone at the end (a fresh clone has no timing cache, so vitest would order by file size). The
// times come from test/durations.json; a file not in it (new) counts as a middling one.
import { readFileSync } from 'node:fs';
import { relative } from 'node:path';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

const SECONDS: Record<string, number> = (
  JSON.parse(readFileSync(new URL('./durations.json', import.meta.url), 'utf8')) as { seconds: Record<string, number> }
).seconds;
const UNKNOWN = 20;

export class LongestFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const took = (f: TestSpecification) => SECONDS[relative(process.cwd(), f.moduleId)] ?? UNKNOWN;
    return [...files].sort((a, b) => took(b) - took(a));
  }
}
