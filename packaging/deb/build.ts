// npm run package:deb [-- OUT_DIR]: builds dist/ (npm run build), stages the package tree and
// runs dpkg-deb. The package sources are beside this file (DEBIAN/, copyright), ../../systemd and
// the generated man pages; nothing here writes unit or maintainer-script text.
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { writeManPages } from '../../cli/man/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const out = resolve(process.argv[2] ?? join(root, 'dist-deb'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
const say = (text: string) => process.stdout.write(`package:deb: ${text}\n`);

const sh = (cmd: string, args: string[], cwd = root) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

say('building dist/ (npm run build)');
rmSync(join(root, 'dist'), { recursive: true, force: true });
sh('npx', ['tsc', '-p', 'tsconfig.build.json']);

const stage = mkdtempSync(join(tmpdir(), 'svcmail-deb-'));
const app = join(stage, 'usr/lib/svcmail');
mkdirSync(app, { recursive: true });
say(`staging in ${stage}`);
cpSync(join(root, 'dist'), join(app, 'dist'), { recursive: true, filter: (src) => !src.endsWith('.map') });
cpSync(join(root, 'bin'), join(app, 'bin'), { recursive: true });
// The pages' assets: lib/web/pages.ts finds them at ../../web/assets from dist/lib/web.
cpSync(join(root, 'web'), join(app, 'dist/web'), { recursive: true });
cpSync(join(root, 'packaging/pm2'), join(app, 'packaging/pm2'), { recursive: true });
for (const f of ['package.json', 'package-lock.json']) copyFileSync(join(root, f), join(app, f));

// Production node_modules only: the packages `npm ls --omit=dev` names, copied as they are installed
// here (native modules were built for this Node).
say('copying production node_modules');
const listed = execFileSync('npm', ['ls', '--omit=dev', '--all', '--parseable'], { cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], maxBuffer: 64 << 20 })
  .split('\n').map((l) => l.trim()).filter((l) => l.includes('node_modules'));
const tops = listed.filter((p) => !listed.some((q) => q !== p && p.startsWith(`${q}/`)));
for (const p of tops) {
  cpSync(p, join(app, relative(root, p)), { recursive: true, dereference: false });
}
// bin/load.js reads from dist/ when no TypeScript sources are beside it: this is a build.

mkdirSync(join(stage, 'usr/bin'), { recursive: true });
symlinkSync('../lib/svcmail/bin/svcmail.js', join(stage, 'usr/bin/svcmail'));
for (const f of readdirSync(join(app, 'bin'))) if (f.endsWith('.js') && f !== 'load.js') chmodSync(join(app, 'bin', f), 0o755);

const units = join(stage, 'lib/systemd/system');
mkdirSync(units, { recursive: true });
for (const f of readdirSync(join(root, 'systemd'))) copyFileSync(join(root, 'systemd', f), join(units, f));

say('generating man pages');
const manTmp = mkdtempSync(join(tmpdir(), 'svcmail-man-'));
for (const file of writeManPages(manTmp)) {
  const rel = relative(manTmp, file);
  const dest = join(stage, 'usr/share/man', `${rel}.gz`);
  mkdirSync(dirname(dest), { recursive: true });
  writeFileSync(dest, gzipSync(readFileSync(file), { level: 9 }));
}
rmSync(manTmp, { recursive: true, force: true });

const doc = join(stage, 'usr/share/doc/svcmail');
mkdirSync(doc, { recursive: true });
copyFileSync(join(here, 'copyright'), join(doc, 'copyright'));

const debian = join(stage, 'DEBIAN');
mkdirSync(debian);
const size = Number(execFileSync('du', ['-sk', '--exclude=DEBIAN', stage], { encoding: 'utf8' }).split('\t')[0]);
writeFileSync(join(debian, 'control'), readFileSync(join(here, 'DEBIAN/control.in'), 'utf8')
  .replace('@VERSION@', pkg.version).replace('@ARCH@', arch).replace('@SIZE@', String(size)));
for (const f of ['postinst', 'prerm', 'postrm']) {
  copyFileSync(join(here, 'DEBIAN', f), join(debian, f));
  chmodSync(join(debian, f), 0o755);
}

mkdirSync(out, { recursive: true });
const deb = join(out, `svcmail_${pkg.version}_${arch}.deb`);
say(`dpkg-deb → ${deb}`);
sh('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z1', '--build', stage, deb]);
rmSync(stage, { recursive: true, force: true });
say(`done: ${deb}`);
