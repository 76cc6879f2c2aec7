import type { WebSocket } from 'ws';
import type { Principal, TokenVerifier } from '../../lib/auth/index.js';
import type { Config } from '../../lib/config/index.js';
import { ApiError } from '../../lib/errors/index.js';
import type { EventBus } from '../../lib/events/index.js';
import type { Logger } from '../../lib/log/index.js';
import type { ChannelAccess } from './access.js';
import { clientFrame, CLOSE, errorFrame, type ClientFrame } from './frames.js';

const MAX_TIMER_MS = 2_147_000_000;

/** What a connection asks of the hub that owns it (PushHub in ./hub.ts). */
export interface ConnectionHub {
  readonly config: Config;
  readonly log: Logger;
  readonly events: EventBus;
  readonly verifier: TokenVerifier;
  readonly access: ChannelAccess;
  readonly maxBuffered: number;
  readonly stats: { dropped: number };
  join(channel: string, conn: PushConnection): void;
  leave(channel: string, conn: PushConnection): void;
  /** The connection signed in: it no longer counts as waiting for LOGIN. */
  settled(conn: PushConnection): void;
  forget(conn: PushConnection): void;
}

/**
 * One /push socket (Spec: Events). Frames are handled one at a time, in order. The socket is
 * signed in at the upgrade (cookie or Bearer) or by its first LOGIN frame; its own uid channel is
 * always subscribed; access is rechecked every mail:push:recheck_ms and the socket closes when it
 * is lost or when the token expires.
 */
export class PushConnection {
  principal: Principal | null = null;
  readonly channels = new Set<string>();
  alive = true;
  #queue: Promise<void> = Promise.resolve();
  #loginTimer: NodeJS.Timeout | null = null;
  #expiryTimer: NodeJS.Timeout | null = null;
  #recheckTimer: NodeJS.Timeout | null = null;
  #closed = false;

  constructor(
    readonly ws: WebSocket,
    private readonly hub: ConnectionHub,
    principal: Principal | null,
  ) {
    ws.on('message', (raw, isBinary) => {
      this.#queue = this.#queue
        .then(() => this.#onFrame(raw.toString(), isBinary))
        .catch((e: unknown) => {
          this.hub.log.warn({ err: (e as Error).message }, 'push frame failed');
          this.close(1011, 'internal error');
        });
    });
    ws.on('pong', () => {
      this.alive = true;
    });
    ws.on('close', () => this.#cleanup());
    ws.on('error', () => this.#cleanup());
    if (principal) this.#signIn(principal, undefined);
    else
      this.#loginTimer = setTimeout(() => this.close(CLOSE.signInRequired, 'LOGIN expected'), hub.config.get('mail:push:login_timeout_ms'));
  }

  /** Back-pressure: a client that does not read is dropped instead of buffering without bound. */
  send(frame: string): void {
    if (this.#closed || this.ws.readyState !== this.ws.OPEN) return;
    if (this.ws.bufferedAmount > this.hub.maxBuffered) {
      this.hub.log.info({ uid: this.principal?.uid, buffered: this.ws.bufferedAmount }, 'push client too slow; dropped');
      this.hub.stats.dropped++;
      this.ws.terminate();
      this.#cleanup();
      return;
    }
    this.ws.send(frame);
  }

  close(code: number, reason: string): void {
    if (this.#closed) return;
    this.ws.close(code, reason);
    this.#cleanup();
    // A peer that never answers the close handshake is cut off.
    setTimeout(() => this.ws.terminate(), 2000).unref();
  }

  #cleanup(): void {
    if (this.#closed) return;
    this.#closed = true;
    for (const t of [this.#loginTimer, this.#expiryTimer]) if (t) clearTimeout(t);
    if (this.#recheckTimer) clearInterval(this.#recheckTimer);
    for (const ch of this.channels) this.hub.leave(ch, this);
    this.channels.clear();
    this.hub.forget(this);
  }

  async #onFrame(text: string, isBinary: boolean): Promise<void> {
    if (this.#closed) return;
    let frame: ClientFrame;
    try {
      if (isBinary) throw new Error('binary');
      const parsed = clientFrame.safeParse(JSON.parse(text));
      if (!parsed.success) throw new Error('shape');
      frame = parsed.data;
    } catch {
      this.send(
        errorFrame(
          undefined,
          'api-106',
          'frames are JSON: {id, type: SUBSCRIBE|UNSUBSCRIBE, data: [uid…]} or {type: LOGIN, data: <token>}',
        ),
      );
      return;
    }
    if (frame.type === 'LOGIN') return this.#login(frame);
    if (!this.principal) {
      this.send(errorFrame(frame.id, 'api-100', 'Sign-in required: send {type: LOGIN, data: <token>} first'));
      return;
    }
    if (frame.type === 'SUBSCRIBE') return this.#subscribe(frame.id, frame.data);
    const dropped = frame.data.filter((ch) => ch !== this.principal!.uid && this.channels.has(ch));
    for (const ch of dropped) this.#drop(ch);
    this.send(JSON.stringify({ id: frame.id, type: 'UNSUBSCRIBED', data: dropped }));
  }

  async #login(frame: Extract<ClientFrame, { type: 'LOGIN' }>): Promise<void> {
    let p: Principal;
    try {
      p = await this.hub.verifier.verify(frame.data, 'bearer');
    } catch (e) {
      const err = e instanceof ApiError ? e : new ApiError('api-101');
      this.send(errorFrame(frame.id, err.code, err.message));
      if (!this.principal) this.close(CLOSE.signInRequired, 'token not accepted');
      return;
    }
    if (this.principal && this.principal.uid !== p.uid) {
      this.send(errorFrame(frame.id, 'api-101', 'A socket stays signed in as one user; open another socket'));
      return;
    }
    this.#signIn(p, frame.id);
  }

  /** First sign-in, or renewal with a newer token of the same user (the web client renews at 45 minutes). */
  #signIn(p: Principal, id: number | undefined): void {
    const first = !this.principal;
    this.principal = p;
    if (this.#loginTimer) clearTimeout(this.#loginTimer);
    this.#loginTimer = null;
    if (this.#expiryTimer) clearTimeout(this.#expiryTimer);
    this.#expiryTimer = setTimeout(
      () => this.close(CLOSE.signInRequired, 'token expired'),
      Math.max(0, Math.min(p.expiresAt - Date.now(), MAX_TIMER_MS)),
    );
    if (first) {
      this.hub.settled(this); // no longer waiting for LOGIN (mail:push:max_unauthenticated*)
      this.channels.add(p.uid);
      this.hub.join(p.uid, this);
      const period = this.hub.config.get('mail:push:recheck_ms');
      this.#recheckTimer = setInterval(() => {
        this.#queue = this.#queue.then(() => this.#recheck()).catch(() => undefined);
      }, period);
    }
    if (id !== undefined || first)
      this.send(
        JSON.stringify({
          ...(id !== undefined ? { id } : {}),
          type: 'LOGGED_IN',
          data: { uid: p.uid, expiresAt: new Date(p.expiresAt).toISOString() },
        }),
      );
  }

  async #subscribe(id: number, wanted: string[]): Promise<void> {
    const p = this.principal!;
    const max = this.hub.config.get('mail:push:max_channels');
    const granted = new Set<string>([p.uid]);
    const fresh: string[] = [];
    for (const ch of new Set(wanted)) {
      if (this.channels.has(ch)) granted.add(ch);
      else fresh.push(ch);
    }
    const verdicts = await Promise.all(fresh.map((ch) => this.hub.access.check(p, ch)));
    const added: string[] = [];
    fresh.forEach((ch, i) => {
      if (verdicts[i] !== 'granted' || this.#closed) return;
      if (this.channels.size >= max) return;
      this.channels.add(ch);
      this.hub.join(ch, this);
      granted.add(ch);
      added.push(ch);
    });
    await Promise.all(added.map((ch) => this.hub.events.whenSubscribed?.(ch)));
    this.send(JSON.stringify({ id, type: 'SUBSCRIBED', data: [...granted] }));
  }

  #drop(channel: string): void {
    this.channels.delete(channel);
    this.hub.leave(channel, this);
  }

  /** Spec: Events 5. Lost access closes the socket; a channel whose record is gone is dropped quietly. */
  async #recheck(): Promise<void> {
    const p = this.principal;
    if (!p || this.#closed) return;
    const gone: string[] = [];
    for (const ch of [...this.channels]) {
      if (ch === p.uid) continue;
      const v = await this.hub.access.check(p, ch);
      if (this.#closed) return;
      if (v === 'denied') {
        this.close(CLOSE.accessLost, 'access lost');
        return;
      }
      if (v === 'gone') gone.push(ch);
    }
    for (const ch of gone) this.#drop(ch);
    if (gone.length) this.send(JSON.stringify({ type: 'UNSUBSCRIBED', data: gone }));
  }
}
