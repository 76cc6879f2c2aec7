import { spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildProgram } from '../../../cli/main.js';
import { signToken } from '../../../lib/auth/index.js';
import { loadConfig, schema } from '../../../lib/config/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requireRoot } from '../../helpers/peers.js';
import { AUDIENCE, ISSUER, seedUsers, startTestApi, TEST_SECRET, type TestApi } from '../../helpers/api.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/svcmail.js');
const dir = mkdtempSync(join(tmpdir(), 'svcmail-cli-'));

interface Run {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

/** Runs `node bin/svcmail.js ...` for real, as an operator would (on the test run's compiled tree: test/global-setup.ts). */
function svcmail(args: string[], env: Record<string, string> = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: ROOT,
      env: { ...process.env, SVCMAIL_CONFIG: '', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

let files = 0;
function conf(name: string, content: Record<string, unknown>): string {
  const p = join(dir, `${files++}-${name}`);
  writeFileSync(p, `${JSON.stringify(content, null, 2)}\n`);
  return p;
}

const freePort = () =>
  new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number };
      s.close(() => resolve(port));
    });
  });

describe.concurrent('svcmail --help', () => {
  // Every command the program declares, nested ones included.
  const commands: string[][] = [];
  const walk = (cmd: ReturnType<typeof buildProgram>, path: string[]) => {
    for (const c of cmd.commands) {
      commands.push([...path, c.name()]);
      walk(c, [...path, c.name()]);
    }
  };
  walk(buildProgram(), []);

  it('declares the commands of the issue', () => {
    const names = commands.map((c) => c.join(' '));
    for (const c of ['start', 'config', 'config get', 'config set', 'config check', 'token']) expect(names).toContain(c);
  });

  it('the top level lists every command', async () => {
    const r = await svcmail(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: svcmail/);
    for (const c of commands.filter((x) => x.length === 1)) expect(r.stdout).toContain(`  ${c[0]}`);
  });

  it('every command has a description and its own help text', () => {
    const program = buildProgram();
    for (const path of commands) {
      let cmd = program;
      for (const name of path) cmd = cmd.commands.find((c) => c.name() === name)!;
      expect(cmd.description(), path.join(' ')).toBeTruthy();
      expect(cmd.helpInformation(), path.join(' ')).toContain(`Usage: svcmail ${path.join(' ')}`);
    }
  });

  it.each(['token'])('svcmail %s --help (spawned) prints its usage, exit 0', async (command) => {
    const c = command.split(' ');
    const r = await svcmail([...c, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`Usage: svcmail ${c.join(' ')}`);
    if (c[0] === 'token') expect(r.stdout).toMatch(/--user[\s\S]*--roles[\s\S]*--elevated[\s\S]*--ttl/);
    if (c[0] === 'start') expect(r.stdout).toContain('--foreground');
  });
});

// Each case starts the CLI, all at once: a loaded two-core machine needs time.
describe.concurrent('svcmail config', { timeout: 120_000 }, () => {
  const good = { 'auth:secret': TEST_SECRET, 'log:level': 'info', listen: { api: '127.0.0.1:18080' } };

  it.each<[string, number, Record<string, unknown>, RegExp]>([
    ['a valid file', 0, good, /configuration OK/],
    ['a bad value', 78, { ...good, 'log:level': 'loud' }, /log:level/],
  ])('check with %s exits %i', async (_what, code, content, out) => {
    const f = conf('check.json', content);
    const r = await svcmail(['config', 'check', '--config', f]);
    expect(r.code).toBe(code);
    expect(code === 0 ? r.stdout : r.stderr).toMatch(out);
    if (code) expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('check in production without auth:secret exits 78 naming it', async () => {
    const f = conf('prod.json', { 'log:level': 'info' });
    const r = await svcmail(['config', 'check', '--config', f], { NODE_ENV: 'production' });
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/auth:secret/);
  });

  it('set validates before writing: a bad value is refused (exit 78) and the file is unchanged', async () => {
    const f = conf('set.json', good);
    const before = readFileSync(f, 'utf8');
    const bad = await svcmail(['config', 'set', '--config', f, 'log:level', 'loud']);
    expect(bad.code).toBe(78);
    expect(bad.stderr).toMatch(/log:level/);
    expect(readFileSync(f, 'utf8')).toBe(before);
  });

  it("check validates what start-up validates: a 5-character ingest secret fails with the daemons' own message", async () => {
    const f = conf('short-ingest.json', { ...good, 'mail:transport:ingest:secret': 'short' });
    const r = await svcmail(['config', 'check', '--config', f], { NODE_ENV: 'production' });
    expect(r.code).toBe(78);
    expect(r.stderr.trim()).toBe(
      'svcmail: configuration error: mail:transport:ingest:secret: must be at least 16 characters outside development',
    );
    const dflt = await svcmail(['config', 'check', '--config', conf('default-ingest.json', good)], { NODE_ENV: 'production' });
    expect(dflt.code).toBe(78);
    expect(dflt.stderr).toMatch(/mail:transport:ingest:secret: still the default/);
  });

  it.runIf(requireRoot('keeping the owner and group of the configuration file'))(
    'set as root keeps the owner and group of the file, and its mode (never wider than 0640)',
    async () => {
      for (const [before, after] of [
        [0o640, 0o640],
        [0o600, 0o600],
        [0o664, 0o640],
      ] as const) {
        const f = conf('owned.json', good);
        chownSync(f, 65534, 65534);
        chmodSync(f, before);
        const r = await svcmail(['config', 'set', '--config', f, 'log:level', 'warn']);
        expect(r.code, r.stderr).toBe(0);
        const st = statSync(f);
        expect({ uid: st.uid, gid: st.gid, mode: (st.mode & 0o777).toString(8) }).toEqual({
          uid: 65534,
          gid: 65534,
          mode: after.toString(8),
        });
        expect(JSON.parse(readFileSync(f, 'utf8'))['log:level']).toBe('warn');
      }
    },
  );

  it.skipIf(existsSync('/etc/svcmail/svcmail.conf'))(
    'set without any configuration file says how to name or create one (exit 64)',
    async () => {
      const r = await svcmail(['config', 'set', 'log:level', 'warn']);
      expect(r.code).toBe(64);
      expect(r.stderr).toMatch(/--config FILE \(or SVCMAIL_CONFIG\), or run svcmail setup to create \/etc\/svcmail\/svcmail\.conf/);
    },
  );

  it('set writes the value with mode 0640, and get reads it back with secrets masked', async () => {
    const f = conf('set-ok.json', good);
    const r = await svcmail(['config', 'set', '--config', f, 'mail:security:elevation_max_age_seconds', '300']);
    expect(r.code).toBe(0);
    const written = JSON.parse(readFileSync(f, 'utf8')) as Record<string, unknown>;
    expect(written['mail:security:elevation_max_age_seconds']).toBe(300);
    expect(written['listen:api']).toBe('127.0.0.1:18080');
    expect(written['auth:secret']).toBe(TEST_SECRET);
    expect(statSync(f).mode & 0o777).toBe(0o640);
    const get = await svcmail(['config', 'get', '--json', '--config', f]);
    expect(get.code).toBe(0);
    const all = JSON.parse(get.stdout) as Record<string, unknown>;
    expect(all['mail:security:elevation_max_age_seconds']).toBe(300);
    expect(all['auth:secret']).toBe('********');
    expect(get.stdout).not.toContain(TEST_SECRET);
  });
});

const backends = await sqlBackends();

describe.each(backends.slice(0, 1))('svcmail token against a running api ($name)', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  const f = conf('token.json', { auth: { secret: TEST_SECRET, options: { audience: AUDIENCE, issuer: ISSUER } } });
  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('prints a token that the api accepts for that user', async () => {
    const r = await svcmail(['token', '--config', f, '--user', 'alice']);
    expect(r.code).toBe(0);
    const token = r.stdout.trim();
    expect(token.split('.')).toHaveLength(3);
    const own = await api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}`, { token });
    expect(own).toMatchObject({ status: 200, body: { address: 'alice@example.test' } });
    expect((await api.call('GET', `/api/mail/mailboxes/${people.bobBox.uid}`, { token })).status).toBe(404);
    const claims = decodeJwt(token);
    expect(claims.exp! - claims.iat!).toBe(3600);
    expect(claims.elevated).toBeUndefined();
  });

  it('--roles admin --elevated --ttl 10m makes an elevated administrator token', async () => {
    const r = await svcmail(['token', '--config', f, '--user', 'ops', '--roles', 'admin,staff', '--elevated', '--ttl', '10m', '--json']);
    expect(r.code).toBe(0);
    const out = JSON.parse(r.stdout) as { token: string; roles: string[]; elevated: boolean; expiresIn: number };
    expect(out).toMatchObject({ roles: ['admin', 'staff'], elevated: true, expiresIn: 600 });
    const c = await api.call('POST', '/api/mail/domains', { token: out.token, body: { name: 'cli.test' } });
    expect(c.status).toBe(201);
    const audit = await api.call('GET', '/api/mail/audit-log?action=domains.create&resourceUid=' + c.body.uid, { token: people.admin });
    expect(audit.body[0]).toMatchObject({ actor: 'ops' });
  });

  it('--ttl longer than auth:options:max_token_age_seconds is refused with the setting named (exit 64); within it the api accepts the token', async () => {
    const long = await svcmail(['token', '--config', f, '--user', 'alice', '--ttl', '2h']);
    expect(long.code).toBe(64);
    expect(long.stdout).toBe('');
    expect(long.stderr).toMatch(/auth:options:max_token_age_seconds \(3600 s\)/);
    const max = await svcmail(['token', '--config', f, '--user', 'alice', '--ttl', '3600s']);
    expect(max.code).toBe(0);
    expect((await api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}`, { token: max.stdout.trim() })).status).toBe(200);
  });

  it('a token from another secret is refused by the api; no secret configured is exit 78', async () => {
    const other = conf('token-other.json', {
      auth: { secret: 'another-secret-0123456789', options: { audience: AUDIENCE, issuer: ISSUER } },
    });
    const r = await svcmail(['token', '--config', other, '--user', 'alice']);
    expect(r.code).toBe(0);
    expect((await api.call('GET', `/api/mail/mailboxes/${people.aliceBox.uid}`, { token: r.stdout.trim() })).status).toBe(403);
    const none = await svcmail(['token', '--config', conf('token-none.json', {}), '--user', 'alice']);
    expect(none.code).toBe(78);
    expect(none.stderr).toMatch(/auth:secret/);
  });
});

/** The direct children of a process (Linux /proc). */
function childPids(pid: number): number[] {
  return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
}

describe('svcmail start --foreground', () => {
  it('starts the api daemon on listen:api; SIGINT stops everything with exit 0', async () => {
    const port = await freePort();
    const data = mkdtempSync(join(dir, 'data-'));
    // Every daemon listening on a fixed loopback port by default gets a free one, so runs never collide.
    const ports: Record<string, string> = {};
    for (const [name, decl] of Object.entries(schema)) {
      const d = (decl as { default?: unknown }).default;
      if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[name] = `127.0.0.1:${await freePort()}`;
    }
    const f = conf('start.json', {
      ...ports,
      'auth:secret': TEST_SECRET,
      data_dir: data,
      'listen:api': `127.0.0.1:${port}`,
      'mail:dev_auto_login:enabled': false,
      datastores: { sql: { url: `sqlite:${join(data, 'svcmail.sqlite')}` } },
      'log:level': 'info',
    });
    // A new process group, so that SIGINT reaches it like a Ctrl-C in a terminal.
    const child = spawn(process.execPath, [BIN, 'start', '--foreground', '--config', f], {
      cwd: ROOT,
      env: { ...process.env, SVCMAIL_CONFIG: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (code, signal) => r([code, signal])));
    try {
      let status: { status: number; body: unknown } | null = null;
      // Four daemons load at once: allow a busy two-core machine its time.
      for (let i = 0; i < 600 && !status; i++) {
        try {
          const res = await fetch(`http://127.0.0.1:${port}/api/status`);
          status = { status: res.status, body: await res.json() };
        } catch {
          await new Promise((r) => setTimeout(r, 200));
        }
      }
      expect(status, out).toMatchObject({ status: 200, body: { status: 'ok', datastore: 'sqlite' } });
      expect(out).toMatch(/\[api\s*\]/);
      const anon = await fetch(`http://127.0.0.1:${port}/api/mail/domains`);
      expect(anon.status).toBe(401);
      // the daemon verifies tokens with the configuration of that file
      const token = await signToken(loadConfig({ file: f, env: { NODE_ENV: 'test' } }), { uid: 'root', roles: ['admin'], elevated: true });
      const signed = await fetch(`http://127.0.0.1:${port}/api/mail/domains`, { headers: { authorization: `Bearer ${token}` } });
      expect(signed.status).toBe(200);
      // A daemon that dies unasked is started again (with back-off), and the others keep running.
      const apiPid = childPids(child.pid!).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes('svcmail-api.js'));
      expect(apiPid, out).toBeDefined();
      process.kill(apiPid!, 'SIGKILL');
      for (let i = 0; i < 600 && !/\[api\s*\] listening on \S+ again/.test(out); i++) await new Promise((r) => setTimeout(r, 100));
      expect(out).toMatch(/\[api\s*\] exited \(SIGKILL\); restarting it in 1 s \(1 of 5\)/);
      expect(out).toMatch(/\[api\s*\] listening on \S+ again/);
      expect((await fetch(`http://127.0.0.1:${port}/api/status`)).status).toBe(200);
      expect(child.exitCode).toBeNull();
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
    }
    const [code, signal] = await exited;
    expect({ code, signal }, out).toEqual({ code: 0, signal: null });
    await expect(fetch(`http://127.0.0.1:${port}/api/status`)).rejects.toThrow();
  }, 180_000);

  it('in development without auth:secret it keeps a secret in data_dir that svcmail token and admin then use', async () => {
    const data = mkdtempSync(join(dir, 'data-dev-'));
    const ports: Record<string, string> = {};
    for (const [name, decl] of Object.entries(schema)) {
      const d = (decl as { default?: unknown }).default;
      if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[name] = `127.0.0.1:${await freePort()}`;
    }
    const f = conf('start-dev.json', { ...ports, data_dir: data, datastores: { sql: { url: `sqlite:${join(data, 'svcmail.sqlite')}` } } });
    const dev = { NODE_ENV: 'development' };
    const child = spawn(process.execPath, [BIN, 'start', '--foreground', '--config', f], {
      cwd: ROOT,
      env: { ...process.env, SVCMAIL_CONFIG: '', ...dev },
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const exited = new Promise<[number | null, NodeJS.Signals | null]>((r) => child.on('exit', (code, signal) => r([code, signal])));
    try {
      const api = `http://${ports['listen:api']}`;
      let up = 0;
      for (let i = 0; i < 600 && up !== 200 && child.exitCode === null; i++) {
        up = await fetch(`${api}/api/status`).then(
          (r) => r.status,
          () => 0,
        );
        if (up !== 200) await new Promise((r) => setTimeout(r, 200));
      }
      expect(up, out).toBe(200);
      expect(statSync(join(data, 'dev-auth-secret')).mode & 0o777).toBe(0o600);
      const token = await svcmail(['token', '--config', f, '--user', 'alice'], dev);
      expect(token.code, token.stderr).toBe(0);
      // a verified token (a wrong secret would answer 403 api-101; no token is the development administrator)
      const mine = await fetch(`${api}/api/mail/mailboxes`, { headers: { authorization: `Bearer ${token.stdout.trim()}` } });
      expect(mine.status).toBe(200);
      const admin = await svcmail(['admin', 'domains', 'create', 'dev.test', '--json', '--config', f], dev);
      expect(admin.code, admin.stderr).toBe(0);
      expect(JSON.parse(admin.stdout)).toMatchObject({ name: 'dev.test' });
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
    }
    expect(await exited, out).toEqual([0, null]);
  }, 180_000);

  it('when the api daemon cannot start, the others are stopped and start exits non-zero', async () => {
    const busy = createServer().listen(0, '127.0.0.1');
    await new Promise((r) => busy.once('listening', r));
    const data = mkdtempSync(join(dir, 'data-'));
    const ports: Record<string, string> = {};
    for (const [name, decl] of Object.entries(schema)) {
      const d = (decl as { default?: unknown }).default;
      if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[name] = `127.0.0.1:${await freePort()}`;
    }
    const f = conf('start-busy.json', {
      ...ports,
      'auth:secret': TEST_SECRET,
      data_dir: data,
      'listen:api': `127.0.0.1:${(busy.address() as { port: number }).port}`,
      datastores: { sql: { url: `sqlite:${join(data, 'svcmail.sqlite')}` } },
    });
    try {
      const r = await svcmail(['start', '--foreground', '--config', f]);
      expect(r.code, r.stderr).not.toBe(0);
      expect(r.stderr).toMatch(/exited \(code [1-9]\d*\); stopping the others/);
      expect(r.stderr).toMatch(/EADDRINUSE|cannot start/);
    } finally {
      busy.close();
    }
  }, 180_000);

  it('a bad configuration stops it at once with one line and exit 78', async () => {
    const f = conf('start-bad.json', { 'auth:secret': TEST_SECRET, listen: { api: 'nowhere' } });
    const r = await svcmail(['start', '--foreground', '--config', f]);
    expect(r.code).toBe(78);
    expect(r.stderr).toMatch(/listen:api/);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
  });
});
