import { Redis } from 'ioredis';
import type { Logger } from '../log/index.js';
import type { Transport, WireMessage } from './types.js';

/** Publishes not yet answered while Redis is away: beyond this, new events are not queued (memory stays bounded). */
const IN_FLIGHT_MAX = 10_000;

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
 * copy receives only the events its clients watch; the mail event stream is one channel.
 */
export class RedisTransport implements Transport {
  readonly name = 'redis' as const;
  readonly #pub: Redis;
  readonly #sub: Redis;
  readonly #prefix: string;
  #deliver: (msg: WireMessage) => void = () => undefined;

  constructor(
    url: string,
    prefix: string,
    private readonly log?: Logger,
  ) {
    const opts = { lazyConnect: true, maxRetriesPerRequest: null, enableOfflineQueue: true, connectionName: 'svcmail-events' };
    this.#pub = new Redis(url, opts);
    this.#sub = new Redis(url, opts);
    this.#prefix = prefix;
    for (const r of [this.#pub, this.#sub]) r.on('error', (e: Error) => this.log?.warn({ err: e.message }, 'redis event channel'));
  }

  async start(deliver: (msg: WireMessage) => void): Promise<void> {
    this.#deliver = deliver;
    await Promise.all([this.#pub.connect(), this.#sub.connect()]);
    this.#sub.on('messageBuffer', (_channel: Buffer, message: Buffer) => {
      try {
        this.#deliver(JSON.parse(message.toString('utf8')) as WireMessage);
      } catch {
        this.log?.warn('redis event channel: malformed message ignored');
      }
    });
    await this.#sub.subscribe(`${this.#prefix}mail`);
  }

  #inFlight = 0;
  #dropped = 0;

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
