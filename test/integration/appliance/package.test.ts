// npm run package:deb builds an installable Debian package; check its contents and run the CLI from it.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePrograms } from '../../helpers/peers.js';
import { freePort } from '../../helpers/scanners.js';
import { schema } from '../../../lib/config/index.js';
import { ROOT, SECRET, startDaemon } from './helpers.js';

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...opts });

describe.runIf(requirePrograms('dpkg-deb'))('npm run package:deb', () => {
  const out = mkdtempSync(join(tmpdir(), 'svcmail-deb-out-'));
  const x = mkdtempSync(join(tmpdir(), 'svcmail-deb-x-'));
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  let deb: string;

  beforeAll(() => {
    const r = run('npm', ['run', 'package:deb', '--', out], { cwd: ROOT });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    deb = join(out, `svcmail_${version}_${run('dpkg', ['--print-architecture']).stdout.trim()}.deb`);
    expect(existsSync(deb)).toBe(true);
  }, 300_000);
  afterAll(() => {
    rmSync(out, { recursive: true, force: true });
    rmSync(x, { recursive: true, force: true });
  });

  it('holds the built JS, production node_modules, the units and the man pages', () => {
    const list = run('dpkg-deb', ['-c', deb])
      .stdout.split('\n')
      .map((l) => l.replace(/^.*\s\.\//, '/').replace(/ -> .*$/, ''));
    for (const path of [
      '/usr/bin/svcmail',
      '/usr/lib/svcmail/bin/svcmail.js',
      '/usr/lib/svcmail/bin/svcmail-api.js',
      '/usr/lib/svcmail/dist/cli/main.js',
      '/usr/lib/svcmail/dist/daemons/api/main.js',
      '/usr/lib/svcmail/node_modules/express/package.json',
      '/usr/lib/svcmail/node_modules/better-sqlite3/package.json',
      '/usr/lib/svcmail/packaging/pm2/ecosystem.config.cjs',
      '/lib/systemd/system/svcmail.target',
      '/lib/systemd/system/svcmail-api.service',
      '/lib/systemd/system/svcmail-worker.service',
      '/lib/systemd/system/svcmail-push.service',
      '/lib/systemd/system/svcmail-protocols.service',
      '/usr/lib/svcmail/dist/web/build/.vite/manifest.json',
      '/usr/share/man/man1/svcmail.1.gz',
      '/usr/share/man/man1/svcmail-admin.1.gz',
      '/usr/share/man/man5/svcmail.conf.5.gz',
      '/usr/share/doc/svcmail/copyright',
      '/usr/share/doc/svcmail/postfix/master.cf.snippet',
      '/usr/share/doc/svcmail/postfix/main.cf.snippet',
    ])
      expect(list, path).toContain(path);
    for (const page of ['mail', 'settings', 'admin', 'escrow'])
      expect(
        list.filter((p) => new RegExp(`^/usr/lib/svcmail/dist/web/build/${page}-[\\w-]+\\.js$`).test(p)),
        page,
      ).toHaveLength(1);
    // No TypeScript sources (they would switch on development behaviour) and no development dependencies.
    expect(list.filter((p) => /^\/usr\/lib\/svcmail\/(lib|cli|daemons)\//.test(p))).toEqual([]);
    for (const dev of ['vitest', 'typescript', 'eslint', 'fast-check', 'pm2'])
      expect(list).not.toContain(`/usr/lib/svcmail/node_modules/${dev}/`);
  });

  it('installs directories 0755 and files 0644 (0755 for scripts), root-owned, and ships only what runs', () => {
    const entries = run('dpkg-deb', ['-c', deb])
      .stdout.trim()
      .split('\n')
      .map((l) => {
        const [mode, owner] = l.split(/\s+/);
        return { mode, owner, path: l.replace(/^.*?\s\.\//, '/').replace(/ -> .*$/, '') };
      });
    // The package's root entry is what dpkg applies to /.
    expect(entries[0]).toEqual({ mode: 'drwxr-xr-x', owner: 'root/root', path: '/' });
    expect(entries.filter((e) => e.owner !== 'root/root')).toEqual([]);
    expect(entries.filter((e) => e.mode.startsWith('d') && e.mode !== 'drwxr-xr-x')).toEqual([]);
    expect(entries.filter((e) => e.mode.startsWith('-') && e.mode !== '-rw-r--r--' && e.mode !== '-rwxr-xr-x')).toEqual([]);
    for (const d of ['api', 'worker', 'push', 'protocols'])
      expect(entries.find((e) => e.path === `/usr/lib/svcmail/bin/svcmail-${d}.js`)?.mode).toBe('-rwxr-xr-x');
    expect(entries.find((e) => e.path === '/usr/lib/svcmail/dist/cli/main.js')?.mode).toBe('-rw-r--r--');

    const paths = entries.map((e) => e.path);
    const nm = '/usr/lib/svcmail/node_modules/';
    // The native addons themselves stay; what built them does not.
    expect(paths).toContain(`${nm}better-sqlite3/build/Release/better_sqlite3.node`);
    expect(paths).toContain(`${nm}unix-dgram/build/Release/unix_dgram.node`);
    expect(paths.filter((p) => /\/(obj\.target|\.deps|obj)\/|\.(o|a|mk|gyp|gypi|cc|cpp|h)$|\/Makefile$/.test(p))).toEqual([]);
    expect(
      paths.filter(
        (p) =>
          p.startsWith(`${nm}better-sqlite3/`) &&
          !/^[^/]+\/(build\/(Release\/(better_sqlite3\.node)?)?|lib\/.*|package\.json|LICENSE|README\.md)?$/.test(p.slice(nm.length)),
      ),
    ).toEqual([]);
    // tsx (a checkout's TypeScript loader) and what only installs or compiles native modules.
    for (const tool of ['tsx', 'esbuild', '@esbuild', 'prebuild-install', 'nan'])
      expect(
        paths.filter((p) => p.startsWith(`${nm}${tool}/`)),
        tool,
      ).toEqual([]);
    // Types, source maps, TypeScript sources and tests of the dependencies.
    expect(paths.filter((p) => p.startsWith(nm) && (/\.([cm]?ts|map)$/.test(p) || /\/(test|tests|__tests__)\//.test(p)))).toEqual([]);
    expect(paths).not.toContain('/usr/lib/svcmail/package-lock.json');
    // Pruned, the package installs at about 75 MB (about 200 MB unpruned); the budget leaves room for new dependencies.
    expect(Number(run('dpkg-deb', ['-f', deb, 'Installed-Size']).stdout.trim())).toBeLessThan(100_000);
  });

  it('has control data and a postinst that creates the svcmail user, /etc/svcmail and /var/lib/svcmail', () => {
    const info = run('dpkg-deb', ['-f', deb, 'Package', 'Version', 'Depends']).stdout;
    expect(info).toContain('Package: svcmail');
    expect(info).toContain(`Version: ${version}`);
    expect(info).toMatch(/Depends: .*nodejs \(>= 20/);
    const control = mkdtempSync(join(tmpdir(), 'svcmail-deb-ctl-'));
    try {
      expect(run('dpkg-deb', ['-e', deb, control]).status).toBe(0);
      const postinst = readFileSync(join(control, 'postinst'), 'utf8');
      expect(postinst).toMatch(/adduser --system .*svcmail/s);
      expect(postinst).toContain('install -d -m 0750 -o root -g svcmail /etc/svcmail');
      expect(postinst).toContain('install -d -m 0750 -o svcmail -g svcmail /var/lib/svcmail');
      for (const script of ['postinst', 'prerm', 'postrm']) expect(run('sh', ['-n', join(control, script)]).status, script).toBe(0);
    } finally {
      rmSync(control, { recursive: true, force: true });
    }
  });

  // dpkg -x of the whole package and a setup that makes a 2048-bit DKIM key: more than 30 s on a busy machine
  it('runs from the extracted package (dist/, its own node_modules): --version and a setup', { timeout: 120_000 }, () => {
    expect(run('dpkg', ['-x', deb, x]).status).toBe(0);
    expect(readlinkSync(join(x, 'usr/bin/svcmail'))).toBe('../lib/svcmail/bin/svcmail.js');
    const cli = join(x, 'usr/lib/svcmail/bin/svcmail.js');
    const env = { PATH: process.env.PATH, NODE_ENV: 'production', HOME: x };
    expect(run(process.execPath, [cli, '--version'], { env }).stdout.trim()).toBe(version);
    const conf = join(x, 'etc/svcmail.conf');
    const r = run(
      process.execPath,
      [
        cli,
        '--config',
        conf,
        '--json',
        'setup',
        '--non-interactive',
        '--domain',
        'example.test',
        '--host',
        'mail.example.test',
        '--auth-url',
        'http://127.0.0.1:9',
        '--auth-secret',
        SECRET,
      ],
      { env, cwd: x },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout).steps.find((s: { step: string }) => s.step === 'local CA').state).toBe('created');
    expect(
      run('man', ['-l', join(x, 'usr/share/man/man1/svcmail-setup.1.gz')], { env: { ...process.env, MANWIDTH: '100' } }).stdout,
    ).toMatch(/--non-interactive/);
  });

  // Spec: Development — auto-login only when the server runs from sources; "This never applies to a
  // build." The same
  // configuration and NODE_ENV=development: the packaged daemon (dist/) asks for a token, the
  // daemon run from this checkout's sources signs the request in as the development administrator.
  it('the packaged api daemon refuses development auto-login under NODE_ENV=development', { timeout: 120_000 }, async () => {
    const conf = join(x, 'etc/svcmail.conf');
    expect(existsSync(conf)).toBe(true); // written by the setup above
    const env = { NODE_ENV: 'development', HOME: x };
    const request = (url: string) =>
      fetch(`${url}/api/mail/domains`).then(async (r) => ({ status: r.status, body: (await r.json()) as { code?: string } }));
    const packaged = await startDaemon('api', conf, await freePort(), { env, bin: join(x, 'usr/lib/svcmail/bin/svcmail-api.js') });
    try {
      expect(await request(packaged.url)).toEqual({ status: 401, body: expect.objectContaining({ code: 'api-100', status: 401 }) });
      expect(packaged.output()).not.toMatch(/auto-login is ON/);
      // The pages and their assets come from the package (dist/web/build), not from a checkout.
      const script = /<script type="module" src="(\/assets\/mail-[\w-]+\.js)"><\/script>/.exec(
        await fetch(`${packaged.url}/`).then((r) => r.text()),
      )?.[1];
      expect(script).toBeDefined();
      expect((await fetch(`${packaged.url}${script}`)).status).toBe(200);
    } finally {
      await packaged.stop();
    }
    // From the sources, not the compiled build the test run points daemons at (test/global-setup.ts).
    const sources = await startDaemon('api', conf, await freePort(), { env: { ...env, SVCMAIL_DIST: '' } });
    try {
      const r = await request(sources.url);
      expect(r.status).toBe(200);
      expect(r.body).toEqual([expect.objectContaining({ name: 'example.test' })]);
    } finally {
      await sources.stop();
    }
  });

  it(
    'svcmail start --foreground runs the four packaged daemons (bin/ beside dist/, not dist/bin); Ctrl-C stops them with exit 0',
    { timeout: 180_000 },
    async () => {
      const conf = join(x, 'etc/svcmail.conf');
      // Every daemon listening on a fixed loopback port by default gets a free one, so runs never collide.
      const ports: Record<string, string> = {};
      for (const [name, decl] of Object.entries(schema)) {
        const d = (decl as { default?: unknown }).default;
        if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[name] = `127.0.0.1:${await freePort()}`;
      }
      const api = ports['listen:api']!;
      const sets = [...Object.entries(ports), ['data_dir', join(x, 'var')]].flatMap(([k, v]) => ['--set', `${k}=${v}`]);
      const child = spawn(
        process.execPath,
        [join(x, 'usr/lib/svcmail/bin/svcmail.js'), '--config', conf, ...sets, 'start', '--foreground'],
        { cwd: x, env: { PATH: process.env.PATH, NODE_ENV: 'production', HOME: x }, stdio: ['ignore', 'pipe', 'pipe'], detached: true },
      );
      let out = '';
      child.stdout.on('data', (d) => (out += d));
      child.stderr.on('data', (d) => (out += d));
      const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (code, signal) => r([code, signal])));
      try {
        let status = 0;
        for (let i = 0; i < 400 && child.exitCode === null && status !== 200; i++) {
          status = await fetch(`http://${api}/api/status`).then(
            (r) => r.status,
            () => 0,
          );
          if (status !== 200) await new Promise((r) => setTimeout(r, 250));
        }
        expect(status, out).toBe(200);
        expect(out).not.toMatch(/Cannot find module/);
        // every daemon runs from the package and says so (the api may answer before the others log)
        const prefixes = ['api', 'worker', 'push', 'protocols'].map((d) => new RegExp(`\\[${d}\\s*\\]`));
        for (let i = 0; i < 240 && !prefixes.every((p) => p.test(out)); i++) await new Promise((r) => setTimeout(r, 250));
        for (const p of prefixes) expect(out, out).toMatch(p);
      } finally {
        if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
      }
      expect(await exited, out).toEqual([0, null]);
    },
  );
});
