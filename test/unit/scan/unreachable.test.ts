import { freePort as sharedFreePort } from '../../helpers/ports.js';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { DEV_UNREACHABLE_RECHECK_MS, realScanners, ScannerUnreachable } from '../../../lib/scan/index.js';

// The "unreachable" scanners live on an address of their own: the suite's other servers listen on
// 127.0.0.1, so a port found free here cannot be taken by a parallel test before the counter
// below listens on it (which once made a scan wait for an unrelated server's answer).
const HOST = '127.0.0.57';

const freePort = () => sharedFreePort(HOST);

// A listener that only counts connections (and hangs up): it shows whether the client tried at all.
function counter(port: number): Promise<{ server: Server; connections: () => number }> {
  let n = 0;
  const server = createServer((s) => {
    n++;
    s.destroy();
  });
  return new Promise((resolve) => server.listen(port, HOST, () => resolve({ server, connections: () => n })));
}

describe('scanners that cannot be connected to', () => {
  let server: Server | null = null;
  afterEach(() => new Promise<void>((r) => (server ? server.close(() => r()) : r())));

  async function setup(env: string) {
    const rspamd = await freePort();
    const clamd = await freePort();
    const config = loadConfig({
      env: { NODE_ENV: env },
      values: {
        'auth:secret': 'x'.repeat(32),
        'mail:transport:ingest:secret': 'y'.repeat(32),
        'mail:scan:rspamd:url': `http://${HOST}:${rspamd}`,
        'mail:scan:clamd:address': `${HOST}:${clamd}`,
        'mail:scan:timeout_ms': 2000,
      },
    });
    let clock = 1_000_000;
    const scanners = realScanners(config, () => clock);
    return { rspamd, clamd, scanners, advance: (ms: number) => (clock += ms) };
  }
  const input = { raw: Buffer.from('Subject: x\r\n\r\nhello\r\n') };

  it('in development are not tried again for every message, and are tried again after the recheck period', async () => {
    const s = await setup('development');
    await expect(s.scanners.spam(input)).rejects.toBeInstanceOf(ScannerUnreachable);
    await expect(s.scanners.virus(input.raw)).rejects.toBeInstanceOf(ScannerUnreachable);
    const rspamd = await counter(s.rspamd);
    server = rspamd.server;
    s.advance(DEV_UNREACHABLE_RECHECK_MS - 1);
    await expect(s.scanners.spam(input)).rejects.toBeInstanceOf(ScannerUnreachable);
    expect(rspamd.connections()).toBe(0);
    s.advance(2);
    // Tried again: it connects now (the counter hangs up, which is a failed scan, not "unreachable").
    const err = await s.scanners.spam(input).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).not.toBeInstanceOf(ScannerUnreachable);
    expect(rspamd.connections()).toBe(1);
  });

  it('outside development are tried for every message', async () => {
    const s = await setup('production');
    await expect(s.scanners.spam(input)).rejects.toBeInstanceOf(ScannerUnreachable);
    const rspamd = await counter(s.rspamd);
    server = rspamd.server;
    await s.scanners.spam(input).catch(() => undefined);
    expect(rspamd.connections()).toBe(1);
  });
});
