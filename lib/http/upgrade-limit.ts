import { STATUS_CODES, type IncomingMessage } from 'node:http';
import express from 'express';
import { ipKeyGenerator } from 'express-rate-limit';
import { ApiError } from '../errors/index.js';

// Spec: Limits — rate limiting, for requests that never reach Express: WebSocket upgrades (/push).
// The client address is decided by the rules req.ip follows (X-Forwarded-For believed only through
// the trusted hops), and counted under the key the anonymous limiter uses (IPv6 per /64).

/** Whether the hop at `address` (0 = the socket's peer) may name the address before it. */
export type TrustFn = (address: string, hop: number) => boolean;

/**
 * A trusted_proxies list (addresses, CIDR ranges, loopback/linklocal/uniquelocal) as the function
 * Express compiles for 'trust proxy' (proxy-addr): the same rules as req.ip, not a second parser.
 */
export function compileTrust(list: readonly string[]): TrustFn {
  return express()
    .set('trust proxy', list.length ? [...list] : false)
    .get('trust proxy fn') as TrustFn;
}

/** The trust rule of the Express app serving `server`'s requests (the api daemon's 'trust proxy'); none: nobody is trusted. */
export function trustOfServer(server: { listeners(event: 'request'): unknown[] }): TrustFn {
  for (const l of server.listeners('request')) {
    const get = (l as { get?: unknown }).get;
    const fn = typeof get === 'function' ? (get as (name: string) => unknown).call(l, 'trust proxy fn') : undefined;
    if (typeof fn === 'function') return fn as TrustFn;
  }
  return () => false;
}

/**
 * The client address of a request seen outside Express: walks from the socket's peer leftwards
 * through X-Forwarded-For while the hop is trusted (proxy-addr's walk, so the answer is req.ip's).
 * A peer on a unix socket has no address; `unixPeerTrusted` says whether it counts as a trusted hop
 * (only local processes can connect there).
 */
export function clientAddress(req: IncomingMessage, trust: TrustFn, opts: { unixPeerTrusted?: boolean } = {}): string {
  const peer = req.socket.remoteAddress;
  const header = req.headers['x-forwarded-for'];
  const forwarded = (Array.isArray(header) ? header.join(',') : (header ?? ''))
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .reverse();
  const chain = [peer ?? '', ...forwarded];
  let i = 0;
  while (i < chain.length - 1 && (i === 0 && peer === undefined ? Boolean(opts.unixPeerTrusted) : trust(chain[i], i))) i++;
  return chain[i];
}

/** The anonymous limiter's key of an address: the address itself, an IPv6 address's /64 network. */
export function addressKey(address: string): string {
  return ipKeyGenerator(address, 64);
}

/** Whether an upgrade carries a token (Authorization, or the jwt cookie), i.e. may be signed in and counted per user. */
export function carriesCredentials(req: IncomingMessage): boolean {
  return Boolean(req.headers.authorization) || /(?:^|;\s*)jwt=/.test(req.headers.cookie ?? '');
}

/** 429 api-109 with Retry-After, as the HTTP limiter answers. */
export function tooManyRequests(seconds: number, message = `Too many requests; retry in ${seconds} s`): ApiError {
  return new ApiError('api-109', message, { headers: { 'Retry-After': String(seconds) } });
}

/** A plain HTTP answer to an upgrade request, carrying the catalogue's error body and its headers (Retry-After). */
export function upgradeRefusal(err: ApiError): string {
  const body = JSON.stringify(err.toBody());
  const extra = Object.entries(err.headers ?? {})
    .map(([k, v]) => `${k}: ${v}\r\n`)
    .join('');
  return `HTTP/1.1 ${err.status} ${STATUS_CODES[err.status] ?? 'Error'}\r\nConnection: close\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n${extra}Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

/** The status and Retry-After (seconds) of the first bytes of an HTTP answer, when they hold its head. */
export function answerHead(bytes: Buffer): { status: number; retryAfter: number | null } | null {
  const text = bytes.subarray(0, 4096).toString('latin1');
  const m = /^HTTP\/1\.[01] (\d{3})[ \r]/.exec(text);
  if (!m) return null;
  const head = text.split('\r\n\r\n')[0];
  const ra = /\r\nRetry-After:[ \t]*(\d{1,9})[ \t]*(?:\r\n|$)/i.exec(head);
  return { status: Number(m[1]), retryAfter: ra ? Number(ra[1]) : null };
}

/**
 * The push daemon's 429 verdicts kept per address key until their Retry-After runs out, so the api
 * daemon's front door answers a flood itself instead of carrying it to the push daemon. It counts
 * nothing (the push daemon counts every attempt once); bounded, the oldest verdict goes first.
 */
export class RefusalMemory {
  readonly #until = new Map<string, number>();

  constructor(
    private readonly max = 10_000,
    private readonly maxSeconds = 3600,
    private readonly now: () => number = Date.now,
  ) {}

  remember(key: string, seconds: number): void {
    const s = Math.min(Math.max(1, Math.ceil(seconds)), this.maxSeconds);
    this.#until.delete(key);
    if (this.#until.size >= this.max) {
      const now = this.now();
      for (const [k, t] of this.#until) if (t <= now) this.#until.delete(k);
      if (this.#until.size >= this.max) this.#until.delete(this.#until.keys().next().value!);
    }
    this.#until.set(key, this.now() + s * 1000);
  }

  /** Whole seconds the key stays refused; 0 when it is not. */
  secondsLeft(key: string): number {
    const t = this.#until.get(key);
    if (t === undefined) return 0;
    const left = t - this.now();
    if (left <= 0) {
      this.#until.delete(key);
      return 0;
    }
    return Math.ceil(left / 1000);
  }
}
