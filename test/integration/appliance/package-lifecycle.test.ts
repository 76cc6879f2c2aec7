// The package's maintainer scripts as dpkg runs them, with a real pm2: dpkg -i, setup, the daemons
// under pm2 as the svcmail user, an upgrade, dpkg --purge. All of it on a throwaway copy of this
// machine: an overlay over / (writes land in a tmpfs), in its own mount, PID and network namespaces,
// so the svcmail user, /etc, /var/lib and the daemons never reach the host's files, processes or
// ports. No systemd runs there (no /run/systemd/system): the off-systemd paths of the scripts.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPath } from '../../../cli/supervisor.js';
import { requirePeer, requirePrograms, requireRoot } from '../../helpers/peers.js';
import { ROOT, SECRET } from './helpers.js';

const run = (cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}) =>
  spawnSync(cmd, args, { encoding: 'utf8', maxBuffer: 256 << 20, ...opts });

// pm2 is AGPL: never a dependency; CI installs it globally. The sandbox needs root (mounts, namespaces).
const TOOLS = ['unshare', 'nsenter', 'chroot', 'ip'];
const ready =
  requireRoot('the sandbox (mount and PID namespaces)') &&
  requirePrograms('pm2', 'dpkg-deb') &&
  requirePeer(
    TOOLS.join(', '),
    TOOLS.every((c) => onPath(c)),
    'not installed (Debian packages util-linux, coreutils, iproute2)',
  );

const SETUP = `set -e
mount -t tmpfs tmpfs "$1"
mkdir "$1/upper" "$1/work" "$1/root"
mount -t overlay overlay -o "lowerdir=/,upperdir=$1/upper,workdir=$1/work" "$1/root"
mount -t proc proc "$1/root/proc"
mount --rbind /dev "$1/root/dev"
mount -t tmpfs tmpfs "$1/root/run"
ip link set lo up
echo ready
exec sleep infinity`;

/** A copy of this machine in namespaces; `sh` runs a script there as root, as a login would. */
class Sandbox {
  private readonly dir = mkdtempSync(join(tmpdir(), 'svcmail-sandbox-'));
  private child?: ChildProcess;
  private init = 0;

  async start(): Promise<void> {
    const child = spawn('unshare', ['--mount', '--pid', '--net', '--fork', '--kill-child', 'sh', '-c', SETUP, 'sandbox', this.dir], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    this.child = child;
    let out = '';
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (d) => ((out += d), out.includes('ready') && resolve()));
      child.stderr!.on('data', (d) => (out += d));
      child.on('exit', (code) => reject(new Error(`sandbox exited (${code}): ${out}`)));
    });
    // The namespace's PID 1 is unshare's only child.
    this.init = Number(readFileSync(`/proc/${child.pid}/task/${child.pid}/children`, 'utf8').trim());
  }

  sh(script: string, env: Record<string, string> = {}) {
    const vars = Object.entries({
      PATH: '/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin',
      HOME: '/root',
      DEBIAN_FRONTEND: 'noninteractive',
      ...env,
    }).map(([k, v]) => `${k}=${v}`);
    const r = run('nsenter', [
      '--target',
      String(this.init),
      '--mount',
      '--pid',
      '--net',
      '--',
      'chroot',
      join(this.dir, 'root'),
      'env',
      '-i',
      ...vars,
      'sh',
      '-c',
      script,
    ]);
    return { status: r.status, out: `${r.stdout}${r.stderr}`, stdout: r.stdout };
  }

  stop(): void {
    // --kill-child: unshare's end kills the namespace's PID 1, and with it every process in there.
    this.child?.kill('SIGKILL');
    spawnSync('sh', ['-c', `while [ -d /proc/${this.init} ]; do sleep 0.1; done`], { timeout: 10_000 });
    rmSync(this.dir, { recursive: true, force: true });
  }
}

// Inside the sandbox: pids (not zombies) whose command line runs one of the package's daemon files.
const DAEMON_PIDS = `for d in /proc/[0-9]*; do
  grep -q '^State:[[:space:]]*Z' "$d/status" 2>/dev/null && continue
  tr '\\0' ' ' 2>/dev/null <"$d/cmdline" | grep -Eq '(^| )/usr/lib/svcmail/bin/svcmail-[a-z]+[.]js( |$)' && echo "\${d#/proc/}"
done; true`;

const onlineApps = (jlist: string) =>
  (JSON.parse(jlist.slice(jlist.indexOf('['))) as Array<{ name: string; pid: number; pm2_env: { status: string } }>)
    .filter((p) => p.name.startsWith('svcmail-'))
    .map((p) => ({ name: p.name, pid: p.pid, status: p.pm2_env.status }));

describe.runIf(ready)('the Debian package installed, run under pm2 and purged (sandboxed dpkg)', () => {
  const out = mkdtempSync(join(tmpdir(), 'svcmail-deb-out-'));
  const version = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const box = new Sandbox();
  let deb = '';
  let pids: number[] = [];

  beforeAll(async () => {
    const r = run('npm', ['run', 'package:deb', '--', out], { cwd: ROOT });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    deb = join(out, `svcmail_${version}_${run('dpkg', ['--print-architecture']).stdout.trim()}.deb`);
    expect(existsSync(deb)).toBe(true);
    await box.start();
  }, 300_000);
  afterAll(() => {
    box.stop();
    rmSync(out, { recursive: true, force: true });
  });

  it('dpkg -i: postinst creates the svcmail user and directories, and off systemd says to run svcmail start', { timeout: 120_000 }, () => {
    const r = box.sh(`dpkg -i ${deb}`);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain("svcmail: run 'svcmail setup' to configure this server, then 'svcmail start' (runs the daemons under pm2).");
    expect(r.out).not.toContain('systemctl');
    expect(box.sh('getent passwd svcmail | cut -d: -f6,7').stdout.trim()).toBe('/var/lib/svcmail:/usr/sbin/nologin');
    expect(
      box
        .sh('stat -c "%n %a %U:%G" /etc/svcmail /var/lib/svcmail /usr/lib/svcmail /usr/lib/svcmail/node_modules')
        .stdout.trim()
        .split('\n'),
    ).toEqual([
      '/etc/svcmail 750 root:svcmail',
      '/var/lib/svcmail 750 svcmail:svcmail',
      '/usr/lib/svcmail 755 root:root',
      '/usr/lib/svcmail/node_modules 755 root:root',
    ]);
  });

  it('svcmail start under a root pm2 runs the daemons as the svcmail user', { timeout: 180_000 }, () => {
    const setup = box.sh(
      `svcmail setup --non-interactive --domain example.test --host mail.example.test --auth-url http://127.0.0.1:9 --auth-secret ${SECRET} --auth-issuer auth.example.test`,
    );
    expect(setup.status, setup.out).toBe(0);
    // The api and push under root's default pm2 home, the protocols daemon under another one: prerm
    // must find both.
    const start = box.sh('cd /root && svcmail start api && svcmail start push && PM2_HOME=/srv/pm2 svcmail start protocols');
    expect(start.status, start.out).toBe(0);
    const up = box.sh('for i in $(seq 240); do curl -sf -o /dev/null http://127.0.0.1:8080/api/status && exit 0; sleep 0.5; done; exit 1');
    expect(up.status, box.sh('tail -n 30 /root/.pm2/logs/*.log').out).toBe(0);

    const apps = [...onlineApps(box.sh('pm2 jlist').stdout), ...onlineApps(box.sh('PM2_HOME=/srv/pm2 pm2 jlist').stdout)];
    expect(apps.map((a) => [a.name, a.status])).toEqual([
      ['svcmail-api', 'online'],
      ['svcmail-push', 'online'],
      ['svcmail-protocols', 'online'],
    ]);
    const svcmailIds = box.sh('echo $(id -u svcmail) $(id -g svcmail)').stdout.trim();
    for (const a of apps) {
      const ids = box.sh(`awk '/^Uid:/ { u = $2 } /^Gid:/ { g = $2 } END { print u, g }' /proc/${a.pid}/status`).stdout.trim();
      expect(ids, a.name).toBe(svcmailIds);
      expect(box.sh(`readlink /proc/${a.pid}/cwd`).stdout.trim(), a.name).toBe('/var/lib/svcmail');
    }
    pids = apps.map((a) => a.pid);
    // A saved process list, which `pm2 resurrect` would bring back at boot.
    expect(box.sh('pm2 save').status).toBe(0);
    expect(box.sh('grep -c \'"name": "svcmail-\' /root/.pm2/dump.pm2').stdout.trim()).toBe('2');
  });

  it('an upgrade (dpkg -i again) leaves the daemons running and says how to restart them under pm2', { timeout: 120_000 }, () => {
    const r = box.sh(`dpkg -i ${deb}`);
    expect(r.status, r.out).toBe(0);
    expect(r.out).toContain(`svcmail: upgraded from ${version}: restart running daemons on the new version ('svcmail restart' under pm2).`);
    expect(box.sh(DAEMON_PIDS).stdout.trim().split('\n').map(Number).sort()).toEqual([...pids].sort());
  });

  it(
    'dpkg --purge stops every daemon (both pm2 homes, a hand-started one, one that ignores SIGTERM) and removes the user, config and data',
    { timeout: 180_000 },
    () => {
      // The worker started by hand, outside any supervisor, as `svcmail start --foreground` would.
      const worker = box.sh(
        'setsid setpriv --reuid=svcmail --regid=svcmail --clear-groups node /usr/lib/svcmail/bin/svcmail-worker.js --config /etc/svcmail/svcmail.conf </dev/null >/dev/null 2>&1 & echo $!',
      );
      // A process stuck in shutdown: the daemon path on its command line, SIGTERM ignored.
      box.sh(
        `setsid node -e 'process.on("SIGTERM", () => {}); setInterval(() => {}, 1000)' /usr/lib/svcmail/bin/svcmail-push.js </dev/null >/dev/null 2>&1 &`,
      );
      const running = box.sh(`for i in $(seq 100); do [ "$( (${DAEMON_PIDS}) | wc -l)" -ge 5 ] && exit 0; sleep 0.2; done; exit 1`);
      expect(running.status, `worker ${worker.stdout}`).toBe(0);
      // Some other process of the service user, which would keep deluser from removing it.
      const other = Number(
        box
          .sh('setsid setpriv --reuid=svcmail --regid=svcmail --clear-groups sleep 1000 </dev/null >/dev/null 2>&1 & echo $!')
          .stdout.trim(),
      );

      const started = Date.now();
      const purge = box.sh('dpkg --purge svcmail');
      expect(purge.status, purge.out).toBe(0);
      expect(purge.out).toContain('svcmail: deleted the svcmail apps of the pm2 in /root/.pm2');
      expect(purge.out).toContain('svcmail: deleted the svcmail apps of the pm2 in /srv/pm2');
      expect(purge.out).toMatch(/svcmail: stopping daemon processes \d+ \d+/);
      expect(purge.out).toMatch(/svcmail: killing daemon processes \d+ \(still running 20 s after SIGTERM\)/);
      expect(Date.now() - started).toBeGreaterThanOrEqual(20_000);
      expect(purge.out).toContain(`svcmail: stopping the processes of the svcmail user: ${other}`);
      expect(purge.out).not.toContain('could not be removed');

      expect(box.sh(DAEMON_PIDS).stdout.trim()).toBe('');
      // pm2 itself runs on, without the apps, also in the saved list.
      for (const home of ['/root/.pm2', '/srv/pm2']) {
        expect(box.sh(`kill -0 $(cat ${home}/pm2.pid)`).status, home).toBe(0);
        expect(onlineApps(box.sh('pm2 jlist', { PM2_HOME: home }).stdout), home).toEqual([]);
      }
      expect(box.sh('grep -c svcmail- /root/.pm2/dump.pm2').stdout.trim()).toBe('0');
      expect(box.sh('getent passwd svcmail; getent group svcmail').stdout).toBe('');
      expect(box.sh('ls -d /etc/svcmail /var/lib/svcmail /usr/lib/svcmail 2>/dev/null').stdout).toBe('');
      expect(box.sh("dpkg-query -W -f '${db:Status-Abbrev}' svcmail").stdout.trim()).not.toMatch(/^ii|^rc/);
    },
  );
});
