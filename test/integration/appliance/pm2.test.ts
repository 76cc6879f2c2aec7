// Supervision without systemd: svcmail start/status/stop drive a real pm2 (run as a separate program).
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DAEMON_NODE_ARGS } from '../../../cli/daemons.js';
import { requirePrograms } from '../../helpers/peers.js';
import { freePort } from '../../helpers/scanners.js';
import { ROOT, setupArgs, svcmail } from './helpers.js';

// pm2 is AGPL: never a dependency; CI installs it globally (npm install -g pm2) to run this.
const pm2 = requirePrograms('pm2');

describe.runIf(pm2)('svcmail start/status/stop under pm2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-pm2-'));
  const conf = join(dir, 'svcmail.conf');
  // SVCMAIL_USER: the daemons run as this test's user, who can read the temporary config, also on a
  // host where the package created the svcmail user.
  const env = { PM2_HOME: join(dir, 'pm2'), SVCMAIL_SUPERVISOR: 'pm2', SVCMAIL_CONFIG: conf, SVCMAIL_USER: userInfo().username };
  let port = 0;

  beforeAll(async () => {
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
    port = await freePort();
    expect((await svcmail(['--config', conf, 'config', 'set', 'listen:api', `127.0.0.1:${port}`])).code).toBe(0);
  }, 60_000);
  afterAll(() => {
    spawnSync('pm2', ['kill'], { env: { ...process.env, PM2_HOME: env.PM2_HOME } });
    rmSync(dir, { recursive: true, force: true });
  });

  it('starts the api daemon through the ecosystem file, reports it online, and stops it', async () => {
    const start = await svcmail(['start', 'api'], env);
    expect(start.code, start.stderr + start.stdout).toBe(0);
    expect(start.stdout).toMatch(/start: api \(via pm2\)/);
    const until = Date.now() + 30_000;
    let up = false;
    while (!up && Date.now() < until) {
      up = await fetch(`http://127.0.0.1:${port}/api/status`).then(
        (r) => r.status === 200,
        () => false,
      );
      if (!up) await new Promise((r) => setTimeout(r, 300));
    }
    expect(up).toBe(true);

    const status = await svcmail(['--json', 'status', 'api'], env);
    expect(status.code).toBe(0);
    expect(status.json()).toMatchObject({ manager: 'pm2', daemons: [{ daemon: 'api', state: 'online' }] });
    expect(status.json().daemons[0].pid).toBeGreaterThan(0);

    const stop = await svcmail(['stop', 'api'], env);
    expect(stop.code, stop.stderr).toBe(0);
    const after = await svcmail(['--json', 'status', 'api'], env);
    expect(after.code).toBe(3);
    expect(after.json().daemons[0].state).toBe('stopped');
    expect(
      await fetch(`http://127.0.0.1:${port}/api/status`).then(
        () => 'up',
        () => 'down',
      ),
    ).toBe('down');
  }, 90_000);
});

interface App {
  name: string;
  script: string;
  args: string[];
  node_args: string[];
  uid?: string;
  gid?: string;
  cwd?: string;
}
const ecosystem = createRequire(import.meta.url)(join(ROOT, 'packaging/pm2/ecosystem.config.cjs')) as {
  apps: App[];
  appsFor: (env: NodeJS.ProcessEnv, uid: number, passwd: string, group: string) => App[];
};

// Which account pm2 runs the daemons as (the systemd units say User=svcmail, Group=svcmail), for
// passwd and group files written here.
describe('the pm2 ecosystem file runs the daemons as the svcmail user when pm2 runs as root', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-ecosystem-'));
  const home = join(dir, 'home');
  mkdirSync(home);
  const passwd = join(dir, 'passwd');
  const group = join(dir, 'group');
  const noGroup = join(dir, 'group-without-svcmail');
  writeFileSync(
    passwd,
    `root:x:0:0:root:/root:/bin/bash\nsvcmail:x:998:997:svcmail daemons:${home}:/usr/sbin/nologin\nmailer:x:997:100::/nonexistent:/usr/sbin/nologin\n`,
  );
  writeFileSync(group, 'root:x:0:\nsvcmail:x:997:\n');
  writeFileSync(noGroup, 'root:x:0:\n');
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  const account = (env: NodeJS.ProcessEnv, uid: number, groups = group) =>
    ecosystem.appsFor(env, uid, passwd, groups).map(({ name, uid: u, gid, cwd }) => ({ name, uid: u, gid, cwd }));
  const all = (fields: Partial<App>) =>
    ['api', 'worker', 'push', 'protocols'].map((d) => ({
      name: `svcmail-${d}`,
      uid: undefined,
      gid: undefined,
      cwd: undefined,
      ...fields,
    }));

  it.each([
    ['root, the svcmail user and group exist: as svcmail:svcmail in its home', {}, 0, group, { uid: 'svcmail', gid: 'svcmail', cwd: home }],
    ['root, no svcmail group: as svcmail with its primary group', {}, 0, noGroup, { uid: 'svcmail', cwd: home }],
    [
      'root, SVCMAIL_USER names a user whose home does not exist: as that user in /',
      { SVCMAIL_USER: 'mailer' },
      0,
      group,
      { uid: 'mailer', cwd: '/' },
    ],
    ["root, SVCMAIL_USER names no user: as pm2's own user", { SVCMAIL_USER: 'nobody-here' }, 0, group, {}],
    ["not root (a developer's pm2): as pm2's own user", {}, 1000, group, {}],
  ] as const)('%s', (_case, env, uid, groups, fields) => {
    expect(account(env, uid, groups)).toEqual(all(fields));
  });

  it("each app runs its bin/ script with the configuration SVCMAIL_CONFIG names, and the exported list is this process's", () => {
    const apps = ecosystem.appsFor({ SVCMAIL_CONFIG: '/srv/svcmail.conf' }, 0, passwd, group);
    expect(apps.map((a) => [a.script, a.args])).toEqual(
      ['api', 'worker', 'push', 'protocols'].map((d) => [join(ROOT, `bin/svcmail-${d}.js`), ['--config', '/srv/svcmail.conf']]),
    );
    // the node arguments of the systemd units and `svcmail start --foreground`
    for (const a of apps) expect(a.node_args).toEqual([...DAEMON_NODE_ARGS]);
    expect(ecosystem.apps).toEqual(ecosystem.appsFor(process.env, process.getuid!(), '/etc/passwd', '/etc/group'));
  });
});
