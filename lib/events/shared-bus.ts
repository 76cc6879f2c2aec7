import { randomUUID } from 'node:crypto';
import type { Logger } from '../log/index.js';
import { LocalEventBus } from './local-bus.js';
import type { ChannelHandler, EntityEvent, EventBus, MailEventKind, MailHandler, Transport, WakeHandler, WireMessage } from './types.js';

/**
 * The shared event channel (Spec: Events 9). Local handlers get events at once; the transport
 * carries them to every other process and host, which hand them to their local handlers. A
 * process ignores its own echo, so nothing is delivered twice.
 */
export class SharedEventBus implements EventBus {
  readonly id = randomUUID();
  readonly #local = new LocalEventBus();
  #closed = false;

  constructor(
    readonly transport: Transport,
    private readonly log?: Logger,
  ) {
    this.#local.onWatch = (channel, watching) => (watching ? transport.watch(channel) : transport.unwatch(channel));
  }

  async start(): Promise<this> {
    await this.transport.start((msg) => this.#receive(msg));
    return this;
  }

  #receive(msg: WireMessage): void {
    if (this.#closed || msg.o === this.id) return;
    if (msg.k === 'e') this.#local.publish(msg.ch, msg.ev);
    else if (msg.k === 'm') this.#local.emitMail(msg.kind, msg.p);
  }

  publish(channels: readonly string[], event: EntityEvent): void {
    if (this.#closed || !channels.length) return;
    const ch = [...new Set(channels)];
    this.#local.publish(ch, event);
    try {
      this.transport.send({ k: 'e', o: this.id, t: Date.now(), ch, ev: event });
    } catch (e) {
      this.log?.warn({ err: (e as Error).message }, 'event not sent to the other processes');
    }
  }

  subscribe(channel: string, handler: ChannelHandler): () => void {
    return this.#local.subscribe(channel, handler);
  }

  async whenSubscribed(channel: string): Promise<void> {
    await this.transport.ready?.(channel);
  }

  emitMail(kind: MailEventKind, payload: Record<string, unknown>): void {
    if (this.#closed) return;
    this.#local.emitMail(kind, payload);
    try {
      this.transport.send({ k: 'm', o: this.id, t: Date.now(), kind, p: payload });
    } catch (e) {
      this.log?.warn({ err: (e as Error).message, kind }, 'mail event not sent to the other processes');
    }
  }

  onMail(kind: MailEventKind, handler: MailHandler): () => void {
    return this.#local.onMail(kind, handler);
  }

  wakeAll(job: string): Promise<number> | null {
    if (this.#closed) return null;
    return this.transport.wakeAll?.(job) ?? null;
  }

  async onWake(handler: WakeHandler): Promise<(() => Promise<void>) | null> {
    return (await this.transport.onWake?.(handler)) ?? null;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    await this.#local.close();
    await this.transport.close();
  }
}
