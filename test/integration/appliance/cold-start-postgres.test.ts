import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { signToken } from '../../../lib/auth/index.js';
import { loadConfig } from '../../../lib/config/index.js';
import { freshPostgres, postgresAvailable } from '../../helpers/databases.js';
import { CLI, ROOT, freeListenSettings } from './helpers.js';

// Spec: What the service does, 7 (the schema is created from the models at startup) on the
// production path — datastores:sql:url pointing at a brand-new, empty PostgreSQL database — and
// `svcmail start --foreground`: the four daemons open the database at the same moment and every one
// of them starts (without the schema lock, the ones that lose the race die with "Already exists").

const withPostgres = await postgresAvailable();

const SECRET = 'cold-start-secret-0123456789abcdef';

describe.skipIf(!withPostgres)('a cold start of the whole appliance on a brand-new PostgreSQL database', () => {
  it('all four daemons start and send heartbeats; Ctrl-C stops them with exit 0', async () => {
    const db = await freshPostgres();
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-cold-'));
    const ports = await freeListenSettings();
    const api = ports['listen:api']!;
    const file = join(dir, 'svcmail.conf');
    writeFileSync(
      file,
      JSON.stringify({
        ...ports,
        'auth:secret': SECRET,
        data_dir: join(dir, 'data'),
        'mail:dev_auto_login:enabled': false,
        datastores: { sql: { url: db.url } },
        'log:level': 'info',
      }),
    );
    const child = spawn(process.execPath, [CLI, 'start', '--foreground', '--config', file], {
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
      const token = await signToken(loadConfig({ file, env: { NODE_ENV: 'test' } }), { uid: 'root', roles: ['admin'], elevated: true });
      let alive: Record<string, number> = {};
      // Four daemons load at once: allow a busy two-core machine its time.
      for (let i = 0; i < 600 && child.exitCode === null; i++) {
        try {
          const res = await fetch(`http://${api}/api/admin/diagnostics`, { headers: { authorization: `Bearer ${token}` } });
          const body = (await res.json()) as { daemons?: Array<{ daemon: string; alive: number }> };
          alive = Object.fromEntries((body.daemons ?? []).map((d) => [d.daemon, d.alive]));
          if (['api', 'worker', 'push', 'protocols'].every((d) => (alive[d] ?? 0) >= 1)) break;
        } catch {
          /* not listening yet */
        }
        await new Promise((r) => setTimeout(r, 250));
      }
      expect(alive, out).toMatchObject({ api: 1, worker: 1, push: 1, protocols: 1 });
      expect(out).not.toMatch(/cannot start|Already exists/);
    } finally {
      if (child.exitCode === null && child.signalCode === null) process.kill(-child.pid!, 'SIGINT');
    }
    const [code, signal] = await exited;
    expect({ code, signal }, out).toEqual({ code: 0, signal: null });
    await db.drop();
  }, 240_000);
});
