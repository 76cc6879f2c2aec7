import { spawn } from 'node:child_process';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './helpers.js';

// A daemon that cannot listen says so in one line naming its setting, the
// address and who holds the port (found through /proc), with what to do.
describe('a daemon whose port is taken', () => {
  it('names listen:push, the address, the process holding it and the fix; exit 78', async () => {
    const busy = createServer();
    await new Promise<void>((r) => busy.listen(0, '127.0.0.1', r));
    const address = `127.0.0.1:${(busy.address() as { port: number }).port}`;
    const dir = mkdtempSync(join(tmpdir(), 'svcmail-listen-'));
    const conf = join(dir, 'svcmail.conf');
    writeFileSync(
      conf,
      JSON.stringify({ 'auth:secret': 'listen-test-secret-0123456789', data_dir: join(dir, 'data'), 'listen:push': address }),
    );
    try {
      const { code, stderr } = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
        const child = spawn(process.execPath, [join(ROOT, 'bin/svcmail-push.js'), '--config', conf], {
          cwd: ROOT,
          env: { ...process.env, SVCMAIL_CONFIG: '' },
          stdio: ['ignore', 'ignore', 'pipe'],
        });
        let err = '';
        child.stderr.on('data', (d) => (err += d));
        child.on('close', (c) => resolve({ code: c, stderr: err }));
      });
      expect(code).toBe(78);
      const line = stderr
        .trim()
        .split('\n')
        .find((l) => l.includes('cannot start'));
      expect(line, stderr).toContain(
        `svcmail-push: cannot start: listen:push: ${address} is already in use (EADDRINUSE) by pid ${process.pid} (`,
      );
      expect(line).toMatch(/\); stop that process or choose another address: svcmail config set listen:push <host:port>$/);
    } finally {
      busy.close();
    }
  }, 60_000);
});
