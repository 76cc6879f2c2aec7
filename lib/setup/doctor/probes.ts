import { request } from 'node:http';
import { connect } from 'node:net';

/** An HTTP GET with a time limit; answers status, body text and the Date header. */
export async function httpGet(
  url: string,
  opts: { timeoutMs?: number; headers?: Record<string, string> } = {},
): Promise<{ status: number; text: string; date: string | null }> {
  let res: Response;
  try {
    res = await fetch(url, { headers: opts.headers, signal: AbortSignal.timeout(opts.timeoutMs ?? 3000), redirect: 'manual' });
  } catch (e) {
    const cause = (e as { cause?: { code?: string; message?: string } }).cause;
    throw new Error(cause?.code ?? cause?.message ?? (e as Error).message);
  }
  return { status: res.status, text: await res.text(), date: res.headers.get('date') };
}

/** host:port or /unix/path → net.connect options. */
export function socketTarget(address: string): { path: string } | { host: string; port: number } {
  if (address.startsWith('/')) return { path: address };
  const i = address.lastIndexOf(':');
  return { host: address.slice(0, i).replace(/^\[|\]$/g, ''), port: Number(address.slice(i + 1)) };
}

/** Sends `request` over TCP (or a unix socket) and answers what comes back until the peer closes (or `until` matches). */
export function tcpExchange(address: string, request: Buffer | null, timeoutMs = 3000, until?: RegExp): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = connect(socketTarget(address) as never);
    const chunks: Buffer[] = [];
    const timer = setTimeout(() => {
      sock.destroy();
      reject(new Error(`no answer from ${address} within ${timeoutMs} ms`));
    }, timeoutMs);
    sock.on('connect', () => {
      if (request) sock.write(request);
      else {
        clearTimeout(timer);
        sock.end();
        resolve('');
      }
    });
    sock.on('data', (d) => {
      chunks.push(d);
      if (until && until.test(Buffer.concat(chunks).toString())) {
        clearTimeout(timer);
        sock.destroy();
        resolve(Buffer.concat(chunks).toString());
      }
    });
    sock.on('end', () => {
      clearTimeout(timer);
      resolve(Buffer.concat(chunks).toString());
    });
    sock.on('error', (e) => {
      clearTimeout(timer);
      reject(e);
    });
  });
}

/** 127.0.0.1:8080 → http://127.0.0.1:8080; 0.0.0.0 and :: are reached over loopback. */
export function httpBase(listen: string): string {
  const host = listen.slice(0, listen.lastIndexOf(':')).replace(/^\[|\]$/g, '');
  const port = listen.slice(listen.lastIndexOf(':') + 1);
  const h = host === '0.0.0.0' ? '127.0.0.1' : host === '::' ? '[::1]' : host.includes(':') ? `[${host}]` : host;
  return `http://${h}:${port}`;
}

/**
 * A GET to a daemon at its listen address, which may be host:port or a unix socket path (fetch
 * cannot reach the latter). Rejects with the connect error (its code: ECONNREFUSED, ENOENT…).
 */
export function httpGetAt(address: string, path: string, timeoutMs = 3000): Promise<{ status: number; text: string }> {
  const target = socketTarget(address);
  return new Promise((resolve, reject) => {
    const where =
      'path' in target
        ? { socketPath: target.path }
        : { host: new URL(httpBase(address)).hostname.replace(/^\[|\]$/g, ''), port: target.port };
    const req = request({ ...where, path, timeout: timeoutMs, headers: { connection: 'close' } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', reject);
    });
    req.on('timeout', () =>
      req.destroy(Object.assign(new Error(`no answer from ${address} within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })),
    );
    req.on('error', reject);
    req.end();
  });
}
