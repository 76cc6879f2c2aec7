// The man pages are generated from the declarations; a setting or command without its page entry fails here.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { schema } from '../../../lib/config/index.js';
import { buildProgram } from '../../../cli/main.js';
import { writeManPages } from '../../../cli/man/index.js';
import { typeOf } from '../../../cli/man/conf-page.js';
import { esc } from '../../../cli/man/roff.js';
import { requirePrograms } from '../../helpers/peers.js';

const withGroff = requirePrograms('groff', 'man');

describe('man pages', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-man-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const files = writeManPages(dir);
  const conf = readFileSync(join(dir, 'man5/svcmail.conf.5'), 'utf8');

  it('svcmail.conf(5) documents every setting with its type, default and doc line', () => {
    const missing: string[] = [];
    for (const [name, decl] of Object.entries(schema)) {
      const at = conf.indexOf(`.B ${esc(name)}\n`);
      if (at < 0) {
        missing.push(name);
        continue;
      }
      const entry = conf.slice(at, conf.indexOf('.TP', at + 1) > 0 ? conf.indexOf('.TP', at + 1) : undefined);
      expect(entry).toContain(esc(decl.doc));
      expect(entry).toContain(`Type: ${esc(typeOf(decl))}`);
      expect(entry).toContain(`Default: ${esc(decl.default === undefined ? '(none)' : JSON.stringify(decl.default))}`);
    }
    expect(missing).toEqual([]);
  });

  it('has svcmail(1) and one page per command group, each naming its subcommands and options', () => {
    const program = buildProgram();
    const names = program.commands.map((c) => c.name()).filter((n) => n !== 'help');
    expect(files.map((f) => f.slice(dir.length + 1)).sort()).toEqual(
      ['man1/svcmail.1', ...names.map((n) => `man1/svcmail-${n}.1`), 'man5/svcmail.conf.5'].sort(),
    );
    const admin = readFileSync(join(dir, 'man1/svcmail-admin.1'), 'utf8');
    for (const sub of ['domains', 'mailboxes', 'lists', 'transport\\-rules', 'quarantine', 'ingest\\-queue', 'audit\\-log', 'policies'])
      expect(admin).toContain(`svcmail admin ${sub}`);
    expect(admin).toContain('svcmail admin mailboxes quota');
    expect(readFileSync(join(dir, 'man1/svcmail-setup.1'), 'utf8')).toContain('\\-\\-non\\-interactive');
    const main = readFileSync(join(dir, 'man1/svcmail.1'), 'utf8');
    for (const n of names) expect(main).toContain(`.B ${esc(n)}\n`);
  });

  it.runIf(withGroff)('renders with groff without warnings', () => {
    for (const f of files) {
      const r = spawnSync('groff', ['-man', '-Tutf8', '-ww', '-z', f], { encoding: 'utf8' });
      expect(r.stderr, f).toBe('');
      expect(r.status).toBe(0);
    }
    const text = spawnSync('man', ['-l', join(dir, 'man5/svcmail.conf.5')], {
      encoding: 'utf8',
      env: { ...process.env, MANWIDTH: '200', MAN_KEEP_FORMATTING: '' },
    }).stdout;
    expect(text).toContain('mail:transport:ingest:secret');
  });
});
