// The man pages as an administrator reads them: written by `npm run man` (man/build.ts), rendered
// by man(1), then read as text.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EXIT } from '../../../cli/output.js';
import { requirePrograms } from '../../helpers/peers.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** The rendered text, wide enough that no line wraps (a wrap could hide a run-on at a line start). */
function render(file: string): string {
  const r = spawnSync('man', ['-l', file], {
    encoding: 'utf8',
    env: { ...process.env, MANWIDTH: '1000', MAN_KEEP_FORMATTING: '', MANPAGER: 'cat', PAGER: 'cat' },
  });
  expect(r.status, r.stderr).toBe(0);
  return r.stdout;
}

/** The lines of one section (from its heading to the next one), indentation removed. */
function section(text: string, title: string): string[] {
  const all = text.split('\n');
  const from = all.indexOf(title);
  expect(from, `section ${title}`).toBeGreaterThan(0);
  const to = all.findIndex((l, i) => i > from && /^[A-Z]/.test(l));
  return all
    .slice(from + 1, to)
    .map((l) => l.trim())
    .filter(Boolean);
}

/** The codes a page's EXIT STATUS section lists (tag lines hold only the number). */
const exitCodes = (text: string) =>
  section(text, 'EXIT STATUS')
    .filter((l) => /^\d+\s/.test(l))
    .map((l) => Number(l.split(/\s/)[0]));

describe.runIf(requirePrograms('groff', 'man'))('man pages (npm run man, read with man -l)', { timeout: 120_000 }, () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-man-'));
  const pages: Record<string, string> = {};
  beforeAll(() => {
    const build = spawnSync(process.execPath, ['--import', 'tsx', 'man/build.ts', dir], { cwd: ROOT, encoding: 'utf8' });
    expect(build.status, build.stderr).toBe(0);
    for (const sub of readdirSync(dir)) for (const f of readdirSync(join(dir, sub))) pages[f] = render(join(dir, sub, f));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('no line runs on into a "See …" reference or a labelled field: each starts its own line or a new sentence', () => {
    expect(Object.keys(pages).length).toBeGreaterThan(10);
    const runOns: string[] = [];
    for (const [name, text] of Object.entries(pages)) {
      for (const line of text.split('\n')) {
        // "See" is only ever a sentence start: after ". " or at the start of the line, never after a bare word.
        if (/[^.!?\s]\s+See\s/.test(line)) runOns.push(`${name}: ${line.trim()}`);
        // svcmail.conf(5): the type, default and environment variable of a setting each have a line.
        if (/\S\s+(Type|Default|Environment):\s/.test(line)) runOns.push(`${name}: ${line.trim()}`);
      }
    }
    expect(runOns).toEqual([]);
  });

  it("svcmail(1) refers to each command's page on a line of its own, after a full sentence", () => {
    const commands = section(pages['svcmail.1'], 'COMMANDS');
    const refs = commands.filter((l) => /^See svcmail-/.test(l));
    expect(refs.length).toBeGreaterThanOrEqual(10);
    for (const ref of refs) {
      expect(ref).toMatch(/^See svcmail-[a-z-]+\(1\)\.$/);
      expect(commands[commands.indexOf(ref) - 1], ref).toMatch(/[.!?]$/);
    }
    expect(commands).toContain('See svcmail-start(1).');
  });

  it('svcmail(1) lists every exit code of the EXIT table, 77 included', () => {
    expect(exitCodes(pages['svcmail.1'])).toEqual([...new Set(Object.values(EXIT))].sort((a, b) => a - b));
    expect(exitCodes(pages['svcmail.1'])).toContain(77);
  });

  it('svcmail-deliver(1) lists each exit code deliver returns, with its meaning, and describes --json', () => {
    const page = pages['svcmail-deliver.1'];
    expect(exitCodes(page)).toEqual([0, 64, 65, 67, 69, 75]);
    const lines = section(page, 'EXIT STATUS');
    expect(lines.find((l) => l.startsWith('75 '))).toMatch(/try again later/);
    expect(lines.find((l) => l.startsWith('67 '))).toMatch(/unknown users/);
    expect(section(page, 'OUTPUT').join(' ')).toMatch(/With --json standard output is one JSON object/);
  });

  it('every page renders with groff without a warning', () => {
    for (const sub of readdirSync(dir)) {
      for (const f of readdirSync(join(dir, sub))) {
        const r = spawnSync('groff', ['-man', '-Tutf8', '-ww', '-z', join(dir, sub, f)], { encoding: 'utf8' });
        expect(r.stderr, f).toBe('');
      }
    }
  });
});
