import { Redis } from 'ioredis';
import type { Logger } from '../log/index.js';
import type { RedisConnector } from './redis-client.js';
import type { Transport, WakeHandler, WireMessage } from './types.js';

/** Publishes not yet answered while Redis is away: beyond this, new events are not queued (memory stays bounded). */
const IN_FLIGHT_MAX = 10_000;

/** A wake-up publish not answered within this counts as received by nobody (the caller falls back). */
const WAKE_TIMEOUT_MS = 500;

/** Resolves with `p`'s value, or `fallback` after `ms` (p is left to settle on its own). */
async function within<T>(p: Promise<T>, ms: number, fallback: T): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([p, new Promise<T>((res) => (timer = setTimeout(() => res(fallback), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The job a wake-up message names (`{"job":"scan","t":<ms>}`), or null when the message is not one. */
function wakeJobOf(message: Buffer): string | null {
  try {
    const m: unknown = JSON.parse(message.toString('utf8'));
    const job = m && typeof m === 'object' ? (m as { job?: unknown }).job : undefined;
    return typeof job === 'string' && job.length > 0 && job.length <= 64 ? job : null;
  } catch {
    return null;
  }
}

/**
 * QUIT when Redis answers (within a second); a Redis that is gone or does not answer is just
 * disconnected, so closing a daemon never waits for it (QUIT would sit in the offline queue forever).
 */
export async function closeRedis(r: Redis): Promise<void> {
  if (r.status === 'ready') {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      r.quit().catch(() => undefined),
      new Promise((res) => {
        timer = setTimeout(res, 1000);
      }),
    ]);
    clearTimeout(timer);
  }
  r.disconnect();
}

/**
 * Redis pub/sub (production, many hosts). Each entity channel is its own Redis channel, so a push
 * copy receives only the events its clients watch; the mail event stream is one channel. Worker
 * wake-ups travel on `<prefix>wake`, listened to only by the processes that run jobs (onWake).
 */
export class RedisTransport implements Transport {
  readonly name = 'redis' as const;
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #prefix: string;
  readonly #wakeChannel: string;
  readonly #wakeHandlers = new Set<WakeHandler>();
  #deliver: (msg: WireMessage) => void = () => undefined;

  constructor(
    connect: RedisConnector | string,
    prefix: string,
    private readonly log?: Logger,
  ) {
    const opts = { lazyConnect: true, maxRetriesPerRequest: null, enableOfflineQueue: true, connectionName: 'svcmail-events' };
    const open: RedisConnector = typeof connect === 'string' ? (o) => new Redis(connect, o) : connect;
    this.#pub = open(opts);
    this.#sub = open(opts);
    this.#prefix = prefix;
    this.#wakeChannel = `${prefix}wake`;
    for (const r of [this.#pub, this.#sub]) r.on('error', (e: Error) => this.log?.warn({ err: e.message }, 'redis event channel'));
  }

  async start(deliver: (msg: WireMessage) => void): Promise<void> {
    this.#deliver = deliver;
    await Promise.all([this.#pub.connect(), this.#sub.connect()]);
    this.#sub.on('messageBuffer', (channel: Buffer, message: Buffer) => {
      if (channel.toString('utf8') === this.#wakeChannel) return this.#woken(message);
      try {
        this.#deliver(JSON.parse(message.toString('utf8')) as WireMessage);
      } catch {
        this.log?.warn('redis event channel: malformed message ignored');
      }
    });
    await this.#sub.subscribe(`${this.#prefix}mail`);
  }

  #woken(message: Buffer): void {
    const job = wakeJobOf(message);
    if (job === null) {
      this.log?.warn('redis wake-up channel: malformed message ignored');
      return;
    }
    for (const handler of this.#wakeHandlers) {
      try {
        handler(job);
      } catch (e) {
        this.log?.warn({ err: (e as Error).message }, 'redis wake-up channel: handler failed');
      }
    }
  }

  #inFlight = 0;
  #dropped = 0;

  wakeAll(job: string): Promise<number> | null {
    // Not connected (or too much unanswered): not queued behind an outage, the caller falls back at once.
    if (this.#pub.status !== 'ready' || this.#inFlight >= IN_FLIGHT_MAX) return null;
    this.#inFlight += 1;
    const published = this.#pub
      .publish(this.#wakeChannel, JSON.stringify({ job, t: Date.now() }))
      .catch(() => 0)
      .finally(() => void (this.#inFlight -= 1));
    return within(published, WAKE_TIMEOUT_MS, 0);
  }

  async onWake(handler: WakeHandler): Promise<() => Promise<void>> {
    this.#wakeHandlers.add(handler);
    if (this.#wakeHandlers.size === 1) {
      try {
        await this.#sub.subscribe(this.#wakeChannel);
      } catch (e) {
        this.#wakeHandlers.delete(handler);
        throw e;
      }
    }
    return async () => {
      if (!this.#wakeHandlers.delete(handler) || this.#wakeHandlers.size) return;
      // Bounded: with Redis gone the command would wait in the offline queue for ever.
      await within(
        this.#sub.unsubscribe(this.#wakeChannel).catch(() => undefined),
        1000,
        undefined,
      );
    };
  }

  send(msg: WireMessage): void {
    // While Redis is away the client queues publishes; past IN_FLIGHT_MAX they are dropped (pub/sub
    // keeps nothing for absent subscribers anyway) so a long outage cannot exhaust memory.
    if (this.#inFlight >= IN_FLIGHT_MAX) {
      if (this.#dropped++ % IN_FLIGHT_MAX === 0)
        this.log?.warn({ dropped: this.#dropped }, 'redis event channel unavailable: events for other processes dropped');
      return;
    }
    this.#inFlight += 1;
    const settled = () => void (this.#inFlight -= 1);
    if (msg.k === 'm') {
      void this.#pub
        .publish(`${this.#prefix}mail`, JSON.stringify(msg))
        .catch(() => undefined)
        .finally(settled);
      return;
    }
    const p = this.#pub.pipeline();
    for (const ch of msg.ch) p.publish(`${this.#prefix}ch:${ch}`, JSON.stringify({ ...msg, ch: [ch] }));
    void p
      .exec()
      .catch(() => undefined)
      .finally(settled);
  }

  readonly #subscribing = new Map<string, Promise<unknown>>();

  watch(channel: string): void {
    const p = this.#sub.subscribe(`${this.#prefix}ch:${channel}`).catch(() => undefined);
    this.#subscribing.set(channel, p);
    void p.then(() => {
      if (this.#subscribing.get(channel) === p) this.#subscribing.delete(channel);
    });
  }

  /** Resolves once Redis has confirmed the subscription, so no event published afterwards is missed. */
  async ready(channel: string): Promise<void> {
    await this.#subscribing.get(channel);
  }

  unwatch(channel: string): void {
    void this.#sub.unsubscribe(`${this.#prefix}ch:${channel}`).catch(() => undefined);
  }

  async close(): Promise<void> {
    await Promise.allSettled([closeRedis(this.#pub), closeRedis(this.#sub)]);
  }
}
