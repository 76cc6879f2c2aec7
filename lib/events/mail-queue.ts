import type { MailEventKind, MailHandler } from './types.js';

const RETRY_FIRST_MS = 100;
const RETRY_MAX_MS = 30_000;
/** Per consumer; beyond it the oldest pending event is dropped and counted (never unbounded memory). */
const PENDING_MAX = 10_000;

interface Consumer {
  kind: MailEventKind;
  handler: MailHandler;
  pending: Array<Record<string, unknown>>;
  running: boolean;
  dropped: number;
}

/**
 * The mail event stream inside one process (Spec: Mail event stream). Delivery to each in-process
 * consumer is at-least-once: a consumer that throws (or rejects) gets the same event again, with
 * a growing pause, until it accepts it; events reach one consumer in order, one at a time.
 */
export class MailQueue {
  readonly #consumers = new Set<Consumer>();
  #closed = false;
  onDrop?: (kind: MailEventKind, dropped: number) => void;

  on(kind: MailEventKind, handler: MailHandler): () => void {
    const c: Consumer = { kind, handler, pending: [], running: false, dropped: 0 };
    this.#consumers.add(c);
    return () => {
      this.#consumers.delete(c);
      c.pending.length = 0;
    };
  }

  emit(kind: MailEventKind, payload: Record<string, unknown>): void {
    if (this.#closed) return;
    for (const c of this.#consumers) {
      if (c.kind !== kind) continue;
      if (c.pending.length >= PENDING_MAX) {
        c.pending.shift();
        c.dropped++;
        this.onDrop?.(kind, c.dropped);
      }
      c.pending.push(payload);
      if (!c.running) void this.#drain(c);
    }
  }

  async #drain(c: Consumer): Promise<void> {
    c.running = true;
    let pause = RETRY_FIRST_MS;
    while (c.pending.length && !this.#closed && this.#consumers.has(c)) {
      try {
        await c.handler(c.kind, c.pending[0]);
        c.pending.shift();
        pause = RETRY_FIRST_MS;
      } catch {
        await new Promise((r) => setTimeout(r, pause).unref());
        pause = Math.min(pause * 2, RETRY_MAX_MS);
      }
    }
    c.running = false;
  }

  close(): void {
    this.#closed = true;
    this.#consumers.clear();
  }
}
