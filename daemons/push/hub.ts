import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { parse as parseCookies } from 'cookie';
import { WebSocketServer } from 'ws';
import { devAutoLoginActive, devPrincipal, tokenSecret, TokenVerifier, type Principal } from '../../lib/auth/index.js';
import type { Config } from '../../lib/config/index.js';
import { ApiError } from '../../lib/errors/index.js';
import type { EventBus } from '../../lib/events/index.js';
import type { RateLimits } from '../../lib/http/index.js';
import { addressKey, clientAddress, compileTrust, tooManyRequests, upgradeRefusal, type TrustFn } from '../../lib/http/index.js';
import type { Logger } from '../../lib/log/index.js';
import type { ResourceRegistry } from '../../lib/resources/index.js';
import type { Deps } from '../../lib/context/index.js';
import { ChannelAccess } from './access.js';
import { PushConnection, type ConnectionHub } from './connection.js';
import { CLOSE } from './frames.js';

const QUERY_TOKEN_PARAMS = ['access_token', 'token', 'jwt', 'id_token'];

/** Refuses an upgrade with a plain HTTP answer carrying the catalogue's error body (and Retry-After when it has one). */
function refuse(socket: Duplex, err: ApiError): void {
  socket.end(upgradeRefusal(err));
}

/**
 * Who may name the client address in X-Forwarded-For: trusted_proxies, and loopback (and a peer on
 * a unix socket listen:push). Both forwarders connect from there: the api daemon's front door, which
 * replaces any X-Forwarded-For with the single address it decided through trusted_proxies
 * (daemons/api/front-door.ts), and a local nginx, which appends the address it saw
 * ($proxy_add_x_forwarded_for), so the walk from the right stops at it and whatever a client wrote
 * to the left is never read. listen:push is a loopback address by default: only local processes can
 * name an address that way.
 */
function pushTrust(config: Config): TrustFn {
  return compileTrust(['loopback', ...config.get('trusted_proxies')]);
}

/**
 * The push daemon's core: accepts /push upgrades (rate limit, Origin, token, waiting-socket caps),
 * keeps the channel → sockets map with one bus subscription per channel, serialises each event
 * once per channel, pings.
 */
export class PushHub implements ConnectionHub {
  readonly config: Config;
  readonly log: Logger;
  readonly events: EventBus;
  readonly verifier: TokenVerifier;
  readonly access: ChannelAccess;
  readonly maxBuffered: number;
  readonly stats = { connections: 0, dropped: 0, delivered: 0 };
  readonly #wss: WebSocketServer;
  readonly #conns = new Set<PushConnection>();
  readonly #channels = new Map<string, { conns: Set<PushConnection>; off: () => void }>();
  readonly #origins: Set<string>;
  readonly #autoLogin: boolean;
  readonly #pinger: NodeJS.Timeout;
  readonly #limits: RateLimits;
  readonly #trust: TrustFn;
  /** Sockets opened without a token that have not signed in yet → their address key. */
  readonly #waiting = new Map<PushConnection, string>();
  /** Address key → how many of #waiting it holds. */
  readonly #waitingPer = new Map<string, number>();

  #fullWarnedAt = 0;

  /** `limits`: the rate-limit counters upgrades count in (createRateLimits; the daemon closes them). */
  constructor(deps: Deps, registry: ResourceRegistry, limits: RateLimits) {
    this.config = deps.config;
    this.log = deps.log;
    this.events = deps.events;
    this.verifier = new TokenVerifier(deps.config, tokenSecret(deps.config));
    this.access = new ChannelAccess(deps, registry);
    this.maxBuffered = deps.config.get('mail:push:max_buffered_bytes');
    this.#origins = new Set(deps.config.get('cors:origins'));
    this.#autoLogin = devAutoLoginActive(deps.config);
    this.#limits = limits;
    this.#trust = pushTrust(deps.config);
    this.#wss = new WebSocketServer({ noServer: true, maxPayload: deps.config.get('mail:push:max_frame_bytes'), perMessageDeflate: false });
    // Keep-alive: a client that did not answer the previous ping is gone (half-open TCP).
    this.#pinger = setInterval(() => {
      for (const c of this.#conns) {
        if (!c.alive) {
          c.ws.terminate();
          continue;
        }
        c.alive = false;
        c.ws.ping();
      }
    }, deps.config.get('mail:push:ping_ms'));
    this.#pinger.unref();
  }

  /** The token from the upgrade request: Bearer first, then the jwt cookie; none → LOGIN frame later. */
  async #principalOf(req: IncomingMessage): Promise<Principal | null> {
    const header = req.headers.authorization;
    if (header && /^bearer\s+/i.test(header)) return this.verifier.verify(header.replace(/^bearer\s+/i, '').trim(), 'bearer');
    const jwt = req.headers.cookie ? parseCookies(req.headers.cookie).jwt : undefined;
    if (jwt) return this.verifier.verify(jwt, 'cookie');
    if (this.#autoLogin && !header) return devPrincipal(this.config);
    return null;
  }

  /** Sockets open without a token, waiting for their LOGIN frame. */
  get waitingCount(): number {
    return this.#waiting.size;
  }

  /**
   * Spec: Events 1 — an Origin outside cors:origins is refused; tokens in the query string are refused.
   * Spec: Limits — every upgrade counts, as an HTTP request would: one signed in at the upgrade per
   * user (rateLimit:authenticated), every other one per client address (rateLimit, IPv6 per /64),
   * refused ones included (a bad token, Origin or path), so floods of bad credentials meet 429 as
   * on the API. Over the limit the answer is 429 api-109 with Retry-After instead of the upgrade's
   * own answer. Sockets without a token are then capped per address and in total (see #admit).
   */
  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => undefined);
    const ip = clientAddress(req, this.#trust, { unixPeerTrusted: true });
    let principal: Principal | null = null;
    let refusal: ApiError | null = null;
    const url = new URL(req.url ?? '/', 'http://push.invalid');
    const origin = req.headers.origin;
    if (url.pathname !== '/push') refusal = new ApiError('api-107');
    else if (QUERY_TOKEN_PARAMS.some((p) => url.searchParams.has(p)))
      refusal = new ApiError('api-100', 'Tokens in the query string are not accepted');
    // Cookies ride along on cross-site WebSocket upgrades and CSRF tokens cannot: the Origin check is
    // the guard. The service's own pages (an Origin naming the host the upgrade was sent to) are not
    // cross-origin, so they need no cors:origins entry.
    else if (origin !== undefined && !this.#origins.has(origin) && !sameHost(origin, req.headers.host))
      refusal = new ApiError('api-102', `Origin ${origin} is not in cors:origins`);
    else {
      try {
        principal = await this.#principalOf(req);
      } catch (e) {
        refusal = e instanceof ApiError ? e : new ApiError('api-101');
      }
    }
    const wait = await this.#limits.count(principal ? { uid: principal.uid } : { ip });
    if (wait) return refuse(socket, tooManyRequests(wait));
    if (refusal) return refuse(socket, refusal);
    const key = addressKey(ip);
    if (!principal) {
      const over = this.#admit(key);
      if (over) return refuse(socket, over);
    }
    // The handshake completes synchronously (no verifyClient): nothing else is admitted in between.
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new PushConnection(ws, this, principal);
      this.#conns.add(conn);
      this.stats.connections = this.#conns.size;
      if (!principal) {
        this.#waiting.set(conn, key);
        this.#waitingPer.set(key, (this.#waitingPer.get(key) ?? 0) + 1);
      }
    });
  }

  /**
   * A socket opened without a token idles until its LOGIN frame or mail:push:login_timeout_ms: one
   * address may hold mail:push:max_unauthenticated_per_address of them (429: that client is asking
   * too much), all addresses together mail:push:max_unauthenticated (503: the daemon is full, no
   * single client is at fault). Either is answered before the handshake, with Retry-After the login
   * timeout, by when every waiting socket has signed in or been closed.
   */
  #admit(key: string): ApiError | null {
    const seconds = Math.max(1, Math.ceil(this.config.get('mail:push:login_timeout_ms') / 1000));
    const perAddress = this.config.get('mail:push:max_unauthenticated_per_address');
    if ((this.#waitingPer.get(key) ?? 0) >= perAddress) {
      return tooManyRequests(
        seconds,
        `Too many /push sockets waiting for LOGIN from this address (${perAddress}); sign in at the upgrade or retry in ${seconds} s`,
      );
    }
    if (this.#waiting.size >= this.config.get('mail:push:max_unauthenticated')) {
      if (Date.now() - this.#fullWarnedAt > 60_000) {
        this.#fullWarnedAt = Date.now();
        this.log.warn(
          { waiting: this.#waiting.size },
          'push: mail:push:max_unauthenticated reached; upgrades without a token are refused (503)',
        );
      }
      return new ApiError('api-113', `Too many /push sockets waiting for LOGIN; sign in at the upgrade or retry in ${seconds} s`, {
        headers: { 'Retry-After': String(seconds) },
      });
    }
    return null;
  }

  /** A socket that waited for LOGIN signed in or closed: its place is free. */
  settled(conn: PushConnection): void {
    const key = this.#waiting.get(conn);
    if (key === undefined) return;
    this.#waiting.delete(conn);
    const n = (this.#waitingPer.get(key) ?? 1) - 1;
    if (n > 0) this.#waitingPer.set(key, n);
    else this.#waitingPer.delete(key);
  }

  join(channel: string, conn: PushConnection): void {
    let entry = this.#channels.get(channel);
    if (!entry) {
      const conns = new Set<PushConnection>();
      const off = this.events.subscribe(channel, (ch, event) => {
        // One serialisation per event and channel, whatever the number of sockets (Spec: Events 3).
        const frame = JSON.stringify({ type: 'MESSAGE', channel: ch, data: { type: event.type, action: event.action, data: event.data } });
        for (const c of conns) c.send(frame);
        this.stats.delivered += conns.size;
      });
      entry = { conns, off };
      this.#channels.set(channel, entry);
    }
    entry.conns.add(conn);
  }

  leave(channel: string, conn: PushConnection): void {
    const entry = this.#channels.get(channel);
    if (!entry) return;
    entry.conns.delete(conn);
    if (!entry.conns.size) {
      entry.off();
      this.#channels.delete(channel);
    }
  }

  forget(conn: PushConnection): void {
    this.settled(conn);
    this.#conns.delete(conn);
    this.stats.connections = this.#conns.size;
  }

  get channelCount(): number {
    return this.#channels.size;
  }

  /** Clients are told to go away (1001) so they reconnect, to this copy once restarted or another. */
  close(): void {
    clearInterval(this.#pinger);
    for (const c of [...this.#conns]) c.close(CLOSE.goingAway, 'server stopping');
    this.#wss.close();
  }
}

/** Whether an Origin names the host (and port) the request was sent to. */
function sameHost(origin: string, host: string | undefined): boolean {
  if (!host) return false;
  try {
    return new URL(origin).host === host.toLowerCase();
  } catch {
    return false;
  }
}
