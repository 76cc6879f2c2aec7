// npm run package:deb [-- OUT_DIR]: compiles the sources as npm run build does, into the staged
// package tree rather than this checkout's dist/ (so that two builds, or a build and a developer's
// dist/, never meet), and runs dpkg-deb. The package sources are beside this file (DEBIAN/,
// copyright), ../../systemd and the generated man pages; nothing here writes unit or
// maintainer-script text.
import { execFileSync } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  copyFileSync,
  cpSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { writeManPages } from '../../cli/man/index.js';
import { copyRuntimeModules } from './runtime-modules.js';

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, '..', '..');
const out = resolve(process.argv[2] ?? join(root, 'dist-deb'));
const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { version: string };
const arch = execFileSync('dpkg', ['--print-architecture'], { encoding: 'utf8' }).trim();
const say = (text: string) => process.stdout.write(`package:deb: ${text}\n`);

const sh = (cmd: string, args: string[], cwd = root) => execFileSync(cmd, args, { cwd, stdio: ['ignore', 'inherit', 'inherit'] });

const stage = mkdtempSync(join(tmpdir(), 'svcmail-deb-'));
const app = join(stage, 'usr/lib/svcmail');
mkdirSync(app, { recursive: true });
say(`staging in ${stage}`);
say('compiling dist/ (tsconfig.build.json)');
sh('npx', ['tsc', '-p', 'tsconfig.build.json', '--outDir', join(app, 'dist'), '--sourceMap', 'false']);
cpSync(join(root, 'bin'), join(app, 'bin'), { recursive: true });
// The web app's build: lib/web/assets.ts finds it at ../../web/build from dist/lib/web.
say('building the web app where a source changed (npm run build:web)');
sh('npm', ['run', '-s', 'build:web', '--', '--if-stale']);
cpSync(join(root, 'web/build'), join(app, 'dist/web/build'), { recursive: true });
cpSync(join(root, 'packaging/pm2'), join(app, 'packaging/pm2'), { recursive: true });
// package.json: its "type": "module" makes dist/ ES modules, and lib/version.ts reads the version.
copyFileSync(join(root, 'package.json'), join(app, 'package.json'));

say('copying the node_modules that run (runtime-modules.ts)');
copyRuntimeModules(root, app);
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
// The Postfix snippets an administrator appends to main.cf and master.cf (svcmail-deliver(1) points here).
mkdirSync(join(doc, 'postfix'));
for (const f of readdirSync(join(here, '..', 'postfix'))) copyFileSync(join(here, '..', 'postfix', f), join(doc, 'postfix', f));

const debian = join(stage, 'DEBIAN');
mkdirSync(debian);
const size = Number(execFileSync('du', ['-sk', '--exclude=DEBIAN', stage], { encoding: 'utf8' }).split('\t')[0]);
writeFileSync(
  join(debian, 'control'),
  readFileSync(join(here, 'DEBIAN/control.in'), 'utf8')
    .replace('@VERSION@', pkg.version)
    .replace('@ARCH@', arch)
    .replace('@SIZE@', String(size)),
);
for (const f of ['postinst', 'prerm', 'postrm']) {
  copyFileSync(join(here, 'DEBIAN', f), join(debian, f));
  chmodSync(join(debian, f), 0o755);
}

normalizeModes(stage);

mkdirSync(out, { recursive: true });
const deb = join(out, `svcmail_${pkg.version}_${arch}.deb`);
say(`dpkg-deb → ${deb}`);
sh('dpkg-deb', ['--root-owner-group', '-Zgzip', '-z1', '--build', stage, deb]);
rmSync(stage, { recursive: true, force: true });
say(`done: ${deb}`);

/**
 * What dpkg installs as it is staged: directories 0755 (the stage itself is a 0700 mkdtemp) and
 * files 0644, but for scripts meant to be run (a #! line and an execute bit where they come from).
 */
function normalizeModes(dir: string): void {
  chmodSync(dir, 0o755);
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    if (e.isDirectory()) normalizeModes(p);
    else if (e.isFile()) chmodSync(p, (statSync(p).mode & 0o111) !== 0 && startsWithShebang(p) ? 0o755 : 0o644);
  }
}

function startsWithShebang(file: string): boolean {
  const fd = openSync(file, 'r');
  try {
    const head = Buffer.alloc(2);
    return readSync(fd, head, 0, 2, 0) === 2 && head.toString('latin1') === '#!';
  } finally {
    closeSync(fd);
  }
}
