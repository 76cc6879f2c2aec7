// sd_notify against a datagram socket the test binds, as systemd would (Type=notify, WatchdogSec).
import { createRequire } from 'node:module';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNotifier, watchdogIntervalMs } from '../../../daemons/shared/sd-notify.js';
import { freePort } from '../../helpers/scanners.js';
import { setupArgs, startApiDaemon, svcmail } from './helpers.js';

const require = createRequire(import.meta.url);
interface Sock {
  bind(p: string): void;
  close(): void;
  on(e: 'message', f: (b: Buffer) => void): void;
}
const unix = require('unix-dgram') as { createSocket(t: 'unix_dgram'): Sock };

function listenDgram(path: string): {
  messages: string[];
  next(pred: (m: string) => boolean, ms?: number): Promise<string>;
  close(): void;
} {
  const messages: string[] = [];
  const waiters: Array<() => void> = [];
  const sock = unix.createSocket('unix_dgram');
  sock.on('message', (b) => {
    messages.push(b.toString());
    waiters.splice(0).forEach((w) => w());
  });
  sock.bind(path);
  return {
    messages,
    close: () => sock.close(),
    next(pred, ms = 15_000) {
      return new Promise((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no matching datagram; got ${JSON.stringify(messages)}`)), ms);
        const check = () => {
          const hit = messages.find(pred);
          if (hit) {
            clearTimeout(timer);
            resolve(hit);
          } else waiters.push(check);
        };
        check();
      });
    },
  };
}

describe('sd_notify', () => {
  let dir: string;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-notify-'));
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
  }, 60_000);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('halves WATCHDOG_USEC and ignores a watchdog meant for another process', () => {
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000' })).toBe(15_000);
    expect(watchdogIntervalMs({ WATCHDOG_USEC: '30000000', WATCHDOG_PID: '1' }, 2)).toBeNull();
    expect(watchdogIntervalMs({})).toBeNull();
    expect(createNotifier({}).active).toBe(false);
  });

  it('the api daemon sends READY=1 once it listens, WATCHDOG=1 pings, and STOPPING=1 on SIGTERM', async () => {
    const path = join(dir, 'notify.sock');
    const sock = listenDgram(path);
    try {
      const port = await freePort();
      const daemon = startApiDaemon(join(dir, 'svcmail.conf'), port, { NOTIFY_SOCKET: path, WATCHDOG_USEC: '400000' });
      const ready = await sock.next((m) => m.includes('READY=1'));
      // READY only after listening: the port answers by now.
      expect((await fetch(`http://127.0.0.1:${port}/api/status`)).status).toBe(200);
      expect(ready).toMatch(/STATUS=listening on 127\.0\.0\.1:\d+/);
      const d = await daemon;
      expect(ready).toContain(`MAINPID=${d.child.pid}`);
      await sock.next((m) => m === 'WATCHDOG=1', 3000);
      const startIdx = sock.messages.length;
      await new Promise((r) => setTimeout(r, 700));
      expect(sock.messages.slice(startIdx).filter((m) => m === 'WATCHDOG=1').length).toBeGreaterThanOrEqual(2); // every 200 ms
      await d.stop();
      expect(await sock.next((m) => m.startsWith('STOPPING=1'))).toMatch(/STATUS=stopping after SIGTERM/);
      expect(d.child.exitCode).toBe(0);
      const order = sock.messages.map((m) => m.split('\n')[0]);
      expect(order[0]).toBe('STATUS=starting');
      expect(order.indexOf('READY=1')).toBeLessThan(order.indexOf('STOPPING=1'));
    } finally {
      sock.close();
    }
  });
});
