import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { Config } from '../config/index.js';

// Connections the server opens because a user or a remote party named the target (a _svc record's
// host=, a URL an ACME server hands back) go through checkedRequest: the host is resolved once, every
// address it resolves to must be public unicast (or inside mail:security:outbound:allowed_ranges),
// and the connection is made to the address that was checked — never a second resolution, so a DNS
// answer that changes between check and connect (rebinding) cannot reach an internal service.
// Redirects are not followed and the answer is read up to a cap. Endpoints an administrator
// configured (sign-in service, vault, DoH, scanners, transport API) are connected to as configured.

/** The connection was not made: the target is not allowed, or its answer broke a limit. */
export class OutboundRefused extends Error {
  override readonly name = 'OutboundRefused';
}

/** Resolves a host name to its addresses (A and AAAA); an empty list when it has none. */
export type HostResolver = (host: string, signal?: AbortSignal) => Promise<string[]>;

/** The system's resolver (getaddrinfo: hosts file, then DNS), every address of the name. */
export const systemHostResolver: HostResolver = async (host) => (await lookup(host, { all: true, verbatim: true })).map((a) => a.address);

export interface OutboundPolicy {
  /** Why the address may not be connected to, or null when it may. */
  refusal(address: string): string | null;
}

/** Ranges allowed although not public: mail:security:outbound:allowed_ranges, parsed once. */
export function outboundPolicy(config: Config): OutboundPolicy {
  const allowed = config.get('mail:security:outbound:allowed_ranges').map((cidr) => ipaddr.parseCIDR(cidr));
  return {
    refusal(address) {
      if (!ipaddr.isValid(address)) return `${address} is not an IP address`;
      // ::ffff:a.b.c.d is the IPv4 address itself: checked (and allowed) as IPv4.
      const addr = ipaddr.process(address);
      if (allowed.some(([net, bits]) => net.kind() === addr.kind() && addr.match(net, bits))) return null;
      const range = addr.range();
      // ::a.b.c.d (IPv4-compatible, deprecated by RFC 4291) is unicast to ipaddr.js; nothing public uses it.
      if (addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).parts.slice(0, 6).every((p) => p === 0))
        return `${address} is an IPv4-compatible (deprecated) address`;
      return range === 'unicast' ? null : `${address} is a ${range} address`;
    },
  };
}

export interface CheckedRequest {
  config: Config;
  resolve: HostResolver;
  method?: 'GET' | 'POST' | 'HEAD';
  headers?: Record<string, string>;
  body?: string | Buffer;
  timeoutMs: number;
  /** Largest answer body read; a longer one is refused. */
  maxBytes: number;
  signal?: AbortSignal;
  /** Trusted CA certificates for https (tests); the system's by default. */
  ca?: string | Buffer;
}

export interface CheckedAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
}

/** The addresses of the URL's host, each checked; throws OutboundRefused when one is not allowed. */
export async function checkedAddresses(url: URL, policy: OutboundPolicy, resolve: HostResolver, signal?: AbortSignal): Promise<string[]> {
  const host = url.hostname.replace(/^\[|\]$/g, '');
  const addresses = isIP(host) ? [host] : await resolve(host, signal);
  if (!addresses.length) throw new OutboundRefused(`${host} has no address`);
  // A name that resolves to any internal address is refused whole: a mixed answer is an attack, not
  // a server to pick a good address of.
  for (const a of addresses) {
    const why = policy.refusal(a);
    if (why)
      throw new OutboundRefused(`${host}: ${why}, which the server does not connect to for others (mail:security:outbound:allowed_ranges)`);
  }
  return addresses;
}

/** Errors that mean no connection was made to that address: the next checked address is tried. */
const NOT_CONNECTED = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EADDRNOTAVAIL', 'ECONNRESET']);

/**
 * One HTTP(S) request to a target named by untrusted input; see the top of this file. The checked
 * addresses are tried in the order the resolver gave them until one takes the connection (a host
 * with an IPv6 address this machine cannot reach, and an IPv4 one it can).
 */
export async function checkedRequest(target: string, opts: CheckedRequest): Promise<CheckedAnswer> {
  const url = new URL(target);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new OutboundRefused(`${url.protocol} URLs are not fetched`);
  const signal = AbortSignal.any([AbortSignal.timeout(opts.timeoutMs), ...(opts.signal ? [opts.signal] : [])]);
  const addresses = await checkedAddresses(url, outboundPolicy(opts.config), opts.resolve, signal);
  for (let i = 0; ; i++) {
    try {
      return await requestTo(url, addresses[i], opts, signal);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (i + 1 >= addresses.length || !code || !NOT_CONNECTED.has(code) || (e as { connected?: boolean }).connected) throw e;
    }
  }
}

/** The request to one checked address. */
function requestTo(url: URL, address: string, opts: CheckedRequest, signal: AbortSignal): Promise<CheckedAnswer> {
  const hostname = url.hostname.replace(/^\[|\]$/g, '');
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<CheckedAnswer>((resolve, reject) => {
    const req = send(
      {
        // The checked address itself: no lookup happens on the way to the socket.
        host: address,
        port: url.port || (url.protocol === 'https:' ? 443 : 80),
        path: `${url.pathname}${url.search}`,
        method: opts.method ?? 'GET',
        headers: { host: url.host, ...opts.headers },
        agent: false,
        signal,
        // TLS: SNI and the certificate check use the name, not the address.
        ...(url.protocol === 'https:' ? { servername: isIP(hostname) ? undefined : hostname, ca: opts.ca } : {}),
      },
      (res) => {
        const status = res.statusCode ?? 0;
        if (status >= 300 && status < 400) {
          res.destroy();
          return reject(new OutboundRefused(`${url.host} answered a redirect (HTTP ${status}); redirects are not followed`));
        }
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (chunk: Buffer) => {
          size += chunk.length;
          if (size > opts.maxBytes) {
            res.destroy();
            reject(new OutboundRefused(`${url.host} answered more than ${opts.maxBytes} bytes`));
            return;
          }
          chunks.push(chunk);
        });
        res.on('end', () => resolve({ status, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    let connected = false;
    req.on('socket', (sock) => sock.once('connect', () => (connected = true)));
    // An error once connected (a reset mid-answer) is not retried elsewhere: the request may have been read.
    req.on('error', (e) => reject(Object.assign(e, { connected })));
    req.end(opts.body);
  });
}
