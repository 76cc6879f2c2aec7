// The page's push socket (Spec: Push WebSocket): signed in by the session cookie at the upgrade;
// SUBSCRIBE names the channels (entity uids) and is sent again after a reconnect; MESSAGE frames go
// to the page. Events are not replayed, so after a reconnect the page reloads what it shows.

import type { PushEvent } from './push-event.js';

export type { PushEvent };

export interface PushHandlers {
  event(e: PushEvent): void;
  /** The socket is back after a loss: whatever happened meanwhile was missed. */
  reconnected(): void;
}

const MAX_WAIT_MS = 30_000;

export class PushClient {
  #ws: WebSocket | null = null;
  #channels = new Set<string>();
  #id = 0;
  #failures = 0;
  #closed = false;
  #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(private readonly handlers: PushHandlers) {
    this.#open(false);
  }

  /** Adds channels (kept for reconnects) and asks for them now when the socket is open. */
  subscribe(channels: string[]): void {
    const fresh = channels.filter((c) => !this.#channels.has(c));
    for (const c of fresh) this.#channels.add(c);
    if (fresh.length) this.#send(fresh);
  }

  close(): void {
    this.#closed = true;
    clearTimeout(this.#timer);
    this.#ws?.close();
  }

  #open(again: boolean): void {
    const ws = new WebSocket(`${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/push`);
    this.#ws = ws;
    ws.onopen = () => {
      this.#failures = 0;
      this.#send([...this.#channels]);
      if (again) this.handlers.reconnected();
    };
    ws.onmessage = (m: MessageEvent<string>) => {
      const frame = JSON.parse(m.data) as {
        type: string;
        channel?: string;
        data?: { type: string; action: string; data: Record<string, unknown> };
      };
      if (frame.type === 'MESSAGE' && frame.channel && frame.data) this.handlers.event({ channel: frame.channel, ...frame.data });
    };
    ws.onclose = () => {
      if (this.#closed) return;
      // 1 s, 2 s, 4 s … at most 30 s between tries, so a restart of the service is not flooded.
      const wait = Math.min(MAX_WAIT_MS, 1000 * 2 ** this.#failures++);
      this.#timer = setTimeout(() => this.#open(true), wait);
    };
  }

  #send(channels: string[]): void {
    if (channels.length && this.#ws?.readyState === WebSocket.OPEN)
      this.#ws.send(JSON.stringify({ id: ++this.#id, type: 'SUBSCRIBE', data: channels }));
  }
}
