// The MTA's side of the hand-off (svcmail deliver, the Postfix socketmap): depends on nothing in lib/, so
// the command Postfix runs for every message loads only this file.
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { createServer, type Server } from 'node:net';
import type { Readable } from 'node:stream';

/** sysexits(3) codes Postfix pipe(8) understands: 75 is temporary (deferred), the others bounce. */
export const SYSEXITS = {
  ok: 0,
  usage: 64,
  dataerr: 65,
  nouser: 67,
  unavailable: 69,
  software: 70,
  tempfail: 75,
  noperm: 77,
  config: 78,
} as const;

export interface MtaTarget {
  /** http://host:port of the api daemon, or a unix socket path. */
  url: string;
  secret: string;
}

interface Answer {
  status: number;
  body: Record<string, unknown> | null;
}

function call(
  target: MtaTarget,
  method: string,
  path: string,
  headers: Record<string, string>,
  body?: Readable,
  timeoutMs = 120_000,
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const base = target.url.startsWith('/')
      ? { socketPath: target.url }
      : (() => {
          const u = new URL(target.url);
          return { host: u.hostname.replace(/^\[|\]$/g, ''), port: Number(u.port || 80) };
        })();
    const req = httpRequest(
      { ...base, method, path, headers: { authorization: `Bearer ${target.secret}`, ...headers }, timeout: timeoutMs },
      (res: IncomingMessage) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let parsed: Record<string, unknown> | null = null;
          try {
            parsed = text ? (JSON.parse(text) as Record<string, unknown>) : null;
          } catch {
            /* not JSON */
          }
          resolve({ status: res.statusCode ?? 0, body: parsed });
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    if (body) {
      body.on('error', (e) => req.destroy(e));
      body.pipe(req);
    } else req.end();
  });
}

const notServed = (a: Answer) => a.status === 403 && JSON.stringify(a.body?.details ?? '').includes('domain-not-served');

export interface DeliverOutcome {
  exitCode: number;
  message: string;
  answer?: Answer;
}

/**
 * The pipe(8) command's core: streams the message to POST /internal/mta/deliver and maps the answer
 * to a sysexits code. Temporary trouble (unreachable, 429, 5xx, a guard refusal that a fixed
 * configuration would cure) defers with 75; unknown users and unserved domains bounce with 67.
 */
export async function deliverToService(
  target: MtaTarget,
  opts: {
    sender: string;
    recipients: string[];
    queueId?: string;
    /** The SMTP client (Postfix ${client_address}, ${client_helo}, ${client_hostname}). */
    client?: { address?: string; helo?: string; hostname?: string };
    message: Readable;
  },
): Promise<DeliverOutcome> {
  const headers: Record<string, string> = {
    'content-type': 'message/rfc822',
    'transfer-encoding': 'chunked',
    'x-envelope-from': encodeURIComponent(opts.sender),
    'x-envelope-to': opts.recipients.map((r) => encodeURIComponent(r)).join(','),
  };
  if (opts.queueId) headers['x-transaction-id'] = opts.queueId;
  const { address, helo, hostname } = opts.client ?? {};
  // Percent-encoded: a HELO is the remote client's text and may hold bytes a header cannot carry.
  if (address) headers['x-envelope-client-address'] = address;
  if (helo) headers['x-envelope-client-helo'] = encodeURIComponent(helo);
  if (hostname) headers['x-envelope-client-hostname'] = hostname;
  let a: Answer;
  try {
    a = await call(target, 'POST', '/internal/mta/deliver', headers, opts.message);
  } catch (e) {
    return { exitCode: SYSEXITS.tempfail, message: `4.3.0 svcmail unreachable: ${(e as Error).message}` };
  }
  const why = String(a.body?.message ?? `status ${a.status}`);
  if (a.status === 202) {
    const results = (a.body?.results ?? []) as Array<{ recipient: string; status: string; reason?: string }>;
    const accepted = results.filter(
      (r) => ['queued', 'duplicate', 'relayed', 'rejected'].includes(r.status) && r.reason !== 'domain not served',
    );
    if (!accepted.length)
      return {
        exitCode: SYSEXITS.nouser,
        message: `5.1.1 ${results.map((r) => `${r.recipient}: ${r.reason ?? r.status}`).join('; ')}`,
        answer: a,
      };
    return { exitCode: SYSEXITS.ok, message: `2.0.0 ${results.map((r) => `${r.recipient}: ${r.status}`).join('; ')}`, answer: a };
  }
  if (notServed(a)) return { exitCode: SYSEXITS.nouser, message: `5.1.2 ${why}`, answer: a };
  if (a.status === 413) return { exitCode: SYSEXITS.unavailable, message: `5.3.4 ${why}`, answer: a };
  if (a.status === 400) return { exitCode: SYSEXITS.dataerr, message: `5.6.0 ${why}`, answer: a };
  return { exitCode: SYSEXITS.tempfail, message: `4.3.0 ${why}`, answer: a };
}

/** One lookup for the socketmap: OK, NOTFOUND, or TEMP (Postfix retries). */
export async function lookup(target: MtaTarget, map: string, key: string): Promise<string> {
  const path =
    map === 'domain'
      ? `/internal/mta/domain?name=${encodeURIComponent(key)}`
      : map === 'resolve'
        ? `/internal/mta/resolve?rcpt=${encodeURIComponent(key)}`
        : null;
  if (!path) return `PERM unknown map ${map}`;
  try {
    const a = await call(target, 'GET', path, {}, undefined, 10_000);
    if (a.status === 200) return map === 'domain' ? 'OK svcmail' : `OK ${key}`;
    if (a.status === 404 || notServed(a) || a.status === 400) return 'NOTFOUND ';
    return `TEMP svcmail answered ${a.status}`;
  } catch (e) {
    return `TEMP svcmail unreachable: ${(e as Error).message}`;
  }
}

const netstring = (s: string) => `${Buffer.byteLength(s)}:${s},`;

/** A Postfix socketmap server (socketmap:inet:host:port:domain and :resolve). */
export function socketmapServer(target: MtaTarget): Server {
  return createServer((sock) => {
    let buf = Buffer.alloc(0);
    let chain = Promise.resolve();
    sock.on('data', (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      for (;;) {
        const colon = buf.indexOf(':');
        if (colon < 0) break;
        const len = Number(buf.subarray(0, colon).toString());
        if (!Number.isInteger(len) || len > 100_000) return void sock.destroy();
        if (buf.length < colon + 1 + len + 1) break;
        const payload = buf.subarray(colon + 1, colon + 1 + len).toString('utf8');
        buf = buf.subarray(colon + 1 + len + 1);
        const sp = payload.indexOf(' ');
        const [map, key] = sp < 0 ? [payload, ''] : [payload.slice(0, sp), payload.slice(sp + 1)];
        chain = chain.then(async () => {
          sock.write(netstring(await lookup(target, map, key)));
        });
      }
    });
    sock.on('error', () => undefined);
  });
}
