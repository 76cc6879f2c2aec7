// `svcmail start --foreground` as an administrator sees it: readable log lines (or JSON for a
// collector), a "listening on http://…" line per daemon and one ready line; a killed terminal
// session leaves no daemon behind.
import { freePort } from '../../helpers/ports.js';
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { schema } from '../../../lib/config/index.js';
import { TEST_SECRET } from '../../helpers/api.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin/svcmail.js');
const dir = mkdtempSync(join(tmpdir(), 'svcmail-fg-'));
const started: ChildProcessWithoutNullStreams[] = [];

/** A configuration whose every loopback address is a free port, so runs never collide. */
async function config(name: string): Promise<{ file: string; ports: Record<string, string> }> {
  const data = mkdtempSync(join(dir, `${name}-`));
  const ports: Record<string, string> = {};
  for (const [key, decl] of Object.entries(schema)) {
    const d = (decl as { default?: unknown }).default;
    if (typeof d === 'string' && /^127\.0\.0\.1:\d+$/.test(d)) ports[key] = `127.0.0.1:${await freePort()}`;
  }
  const file = join(dir, `${name}.json`);
  writeFileSync(
    file,
    JSON.stringify({
      ...ports,
      'auth:secret': TEST_SECRET,
      data_dir: data,
      'log:level': 'info',
      datastores: { sql: { url: `sqlite:${join(data, 'svcmail.sqlite')}` } },
    }),
  );
  return { file, ports };
}

function start(args: string[]): { child: ChildProcessWithoutNullStreams; out: () => string; until: (re: RegExp) => Promise<void> } {
  const child = spawn(process.execPath, [BIN, 'start', '--foreground', ...args], {
    cwd: ROOT,
    env: { ...process.env, SVCMAIL_CONFIG: '', NODE_ENV: 'test' },
    stdio: 'pipe',
    detached: true,
  });
  started.push(child);
  let out = '';
  const waiters: Array<() => void> = [];
  const take = (d: Buffer) => {
    out += d;
    for (const w of waiters) w();
  };
  child.stdout.on('data', take);
  child.stderr.on('data', take);
  const until = (re: RegExp) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (re.test(out)) resolve();
        else if (child.exitCode !== null) reject(new Error(`exited ${child.exitCode} before ${re}:\n${out}`));
      };
      waiters.push(check);
      child.on('exit', check);
      check();
    });
  return { child, out: () => out, until };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

afterAll(() => {
  for (const c of started) if (c.exitCode === null && c.signalCode === null) process.kill(-c.pid!, 'SIGKILL');
});

// Each case starts daemons: a loaded two-core machine needs its time.
describe.concurrent('svcmail start --foreground', { timeout: 180_000 }, () => {
  it('--log-format pretty shows readable lines, where each daemon listens and one ready line', async () => {
    const { file, ports } = await config('pretty');
    const run = start(['api', '--config', file, '--log-format', 'pretty']);
    // The ready line comes over IPC, the daemon's own log line through its pipe: wait for both.
    await run.until(/svcmail: ready/);
    await run.until(/INFO: api daemon listening/);
    const lines = run.out().split('\n');
    expect(lines).toContain(`[api] listening on http://${ports['listen:api']}`);
    expect(run.out()).toContain(`svcmail: ready, 1 daemon running: the API and pages answer on http://${ports['listen:api']}/`);
    // pino-pretty's shape: [HH:MM:ss] LEVEL: message {fields}; no raw JSON object left
    expect(
      lines.some((l) => /^\[api\] \[\d\d:\d\d:\d\d\] INFO: api daemon listening \{"address":"127\.0\.0\.1:\d+"/.test(l)),
      run.out(),
    ).toBe(true);
    expect(lines.filter((l) => l.startsWith('[api] {'))).toEqual([]);
    expect(run.out().includes('\u001b[')).toBe(false); // not a terminal: no colour codes
    const res = await fetch(`http://${ports['listen:api']}/api/status`);
    expect(res.status).toBe(200);
    process.kill(-run.child.pid!, 'SIGINT');
    await new Promise((r) => run.child.once('exit', r));
    expect(run.child.exitCode).toBe(0);
  });

  it('off a terminal the lines stay JSON; a killed foreground process leaves no daemon running', async () => {
    const { file } = await config('json');
    const run = start(['--config', file]);
    await run.until(/svcmail: ready, 4 daemons running/);
    const json = run
      .out()
      .split('\n')
      .map((l) => /^\[(\w+)\s*\] (\{.*\})$/.exec(l))
      .filter((m) => m !== null);
    const pids = new Map<string, number>();
    for (const m of json) pids.set(m[1], (JSON.parse(m[2]) as { pid: number }).pid);
    expect([...pids.keys()].sort()).toEqual(['api', 'protocols', 'push', 'worker']);
    for (const pid of pids.values()) expect(alive(pid)).toBe(true);
    // As when the terminal's session is killed: no signal reaches the daemons, only the parent dies.
    run.child.kill('SIGKILL');
    const deadline = Date.now() + 30_000;
    while ([...pids.values()].some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
    expect([...pids.entries()].filter(([, pid]) => alive(pid))).toEqual([]);
  });
});
