import { EventEmitter } from 'node:events';
import { MailQueue } from './mail-queue.js';
import type { ChannelHandler, EntityEvent, EventBus, MailEventKind, MailHandler } from './types.js';

/** The in-process bus: one process, no transport. SharedEventBus builds on it. */
export class LocalEventBus implements EventBus {
  readonly #emitter = new EventEmitter();
  readonly #mail = new MailQueue();
  /** Called with the channel when its first handler arrives and when its last one leaves. */
  onWatch?: (channel: string, watching: boolean) => void;

  constructor() {
    this.#emitter.setMaxListeners(0);
  }

  publish(channels: readonly string[], event: EntityEvent): void {
    for (const ch of new Set(channels)) {
      for (const h of this.#emitter.listeners(`ch:${ch}`) as ChannelHandler[]) {
        try {
          h(ch, event);
        } catch {
          // one failing subscriber must not stop the publisher or the others
        }
      }
    }
  }

  subscribe(channel: string, handler: ChannelHandler): () => void {
    const name = `ch:${channel}`;
    this.#emitter.on(name, handler);
    if (this.#emitter.listenerCount(name) === 1) this.onWatch?.(channel, true);
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.#emitter.off(name, handler);
      if (this.#emitter.listenerCount(name) === 0) this.onWatch?.(channel, false);
    };
  }

  emitMail(kind: MailEventKind, payload: Record<string, unknown>): void {
    this.#mail.emit(kind, payload);
  }

  onMail(kind: MailEventKind, handler: MailHandler): () => void {
    return this.#mail.on(kind, handler);
  }

  async close(): Promise<void> {
    this.#emitter.removeAllListeners();
    this.#mail.close();
  }
}
