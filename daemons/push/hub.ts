import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { parse as parseCookies } from 'cookie';
import { WebSocketServer } from 'ws';
import { devAutoLoginActive, devPrincipal, tokenSecret, TokenVerifier, type Principal } from '../../lib/auth/index.js';
import type { Config } from '../../lib/config/index.js';
import { ApiError } from '../../lib/errors/index.js';
import type { EventBus } from '../../lib/events/index.js';
import type { Logger } from '../../lib/log/index.js';
import type { Deps, ResourceRegistry } from '../../lib/resources/index.js';
import { ChannelAccess } from './access.js';
import { PushConnection } from './connection.js';
import { CLOSE } from './frames.js';

const QUERY_TOKEN_PARAMS = ['access_token', 'token', 'jwt', 'id_token'];

/** Refuses an upgrade with a plain HTTP answer carrying the catalogue's error body. */
function refuse(socket: Duplex, err: ApiError): void {
  const body = JSON.stringify({ code: err.code, status: err.status, message: err.message });
  socket.end(`HTTP/1.1 ${err.status} ${err.status === 401 ? 'Unauthorized' : err.status === 403 ? 'Forbidden' : 'Not Found'}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
}

/**
 * The push daemon's core: accepts /push upgrades (Origin, token), keeps the channel → sockets
 * map with one bus subscription per channel, serialises each event once per channel, pings.
 */
export class PushHub {
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

  constructor(deps: Deps, registry: ResourceRegistry) {
    this.config = deps.config;
    this.log = deps.log;
    this.events = deps.events;
    this.verifier = new TokenVerifier(deps.config, tokenSecret(deps.config));
    this.access = new ChannelAccess(deps, registry);
    this.maxBuffered = deps.config.get('mail:push:max_buffered_bytes');
    this.#origins = new Set(deps.config.get('cors:origins'));
    this.#autoLogin = devAutoLoginActive(deps.config);
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

  /** Spec: Events 1 — an Origin outside cors:origins is refused; tokens in the query string are refused. */
  async handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    socket.on('error', () => undefined);
    const url = new URL(req.url ?? '/', 'http://push.invalid');
    if (url.pathname !== '/push') return refuse(socket, new ApiError('api-107'));
    if (QUERY_TOKEN_PARAMS.some((p) => url.searchParams.has(p))) return refuse(socket, new ApiError('api-100', 'Tokens in the query string are not accepted'));
    const origin = req.headers.origin;
    // Cookies ride along on cross-site WebSocket upgrades and CSRF tokens cannot: the Origin check is the guard.
    if (origin !== undefined && !this.#origins.has(origin)) return refuse(socket, new ApiError('api-102', `Origin ${origin} is not in cors:origins`));
    let principal: Principal | null;
    try {
      principal = await this.#principalOf(req);
    } catch (e) {
      return refuse(socket, e instanceof ApiError ? e : new ApiError('api-101'));
    }
    this.#wss.handleUpgrade(req, socket, head, (ws) => {
      const conn = new PushConnection(ws, this, principal);
      this.#conns.add(conn);
      this.stats.connections = this.#conns.size;
    });
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

