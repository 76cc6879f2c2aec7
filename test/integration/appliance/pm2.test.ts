// Supervision without systemd: svcmail start/status/stop drive a real pm2 (run as a separate program).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { onPath } from '../../../cli/supervisor.js';
import { freePort } from '../../helpers/scanners.js';
import { setupArgs, svcmail } from './helpers.js';

// pm2 is AGPL: never a dependency; CI installs it globally (npm install -g pm2) to run this.
const pm2 = onPath('pm2');
if (!pm2 && process.env.CI === 'true') throw new Error('pm2 is required in CI (npm install -g pm2)');

describe.skipIf(!pm2)('svcmail start/status/stop under pm2', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-pm2-'));
  const conf = join(dir, 'svcmail.conf');
  const env = { PM2_HOME: join(dir, 'pm2'), SVCMAIL_SUPERVISOR: 'pm2', SVCMAIL_CONFIG: conf };
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
      up = await fetch(`http://127.0.0.1:${port}/api/status`).then((r) => r.status === 200, () => false);
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
    expect(await fetch(`http://127.0.0.1:${port}/api/status`).then(() => 'up', () => 'down')).toBe('down');
  }, 90_000);
});
