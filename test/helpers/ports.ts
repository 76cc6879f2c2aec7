import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

/** The kernel's ephemeral ports (bind to port 0, outgoing connections): 32768–60999 unless set otherwise. */
function ephemeralStart(): number {
  try {
    return Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]) || 32768;
  } catch {
    return 32768;
  }
}
const LOW = 10_000;
const HIGH = Math.max(LOW + 1000, ephemeralStart() - 1);

const bindable = (port: number, host: string) =>
  new Promise<boolean>((resolve) => {
    const s = createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });

/**
 * A port nothing listens on at `host`, for a daemon a test starts a moment later. Chosen at random
 * below the kernel's ephemeral range: a server another test binds to port 0 meanwhile (a sign-in
 * double, an in-process API, a client's own end of a connection) is given an ephemeral port and so
 * never takes this one before the daemon binds it — which a port 0 probe could not promise.
 */
export async function freePort(host = '127.0.0.1'): Promise<number> {
  for (let i = 0; i < 200; i++) {
    const port = LOW + Math.floor(Math.random() * (HIGH - LOW));
    if (await bindable(port, host)) return port;
  }
  throw new Error(`no free port on ${host} between ${LOW} and ${HIGH}`);
}
