/** A push event on an entity channel (Spec: Events, server frame data). */
export interface EntityEvent {
  type: string;
  action: 'create' | 'update' | 'delete' | string;
  data: Record<string, unknown>;
}

/** Kinds of the mail event stream for server-side consumers (Spec: Mail event stream). */
export const MAIL_EVENT_KINDS = ['message.delivered', 'message.sent', 'send.failed'] as const;
export type MailEventKind = (typeof MAIL_EVENT_KINDS)[number];

export type ChannelHandler = (channel: string, event: EntityEvent) => void;
export type MailHandler = (kind: MailEventKind, payload: Record<string, unknown>) => void | Promise<void>;

/**
 * The event channel. Entity events go to channels named by uid; the mail event stream goes to
 * server-side consumers. LocalEventBus is the in-process bus; SharedEventBus carries the same
 * interface between processes and hosts (Redis, or the embedded hub).
 */
export interface EventBus {
  publish(channels: readonly string[], event: EntityEvent): void;
  subscribe(channel: string, handler: ChannelHandler): () => void;
  emitMail(kind: MailEventKind, payload: Record<string, unknown>): void;
  onMail(kind: MailEventKind, handler: MailHandler): () => void;
  /** Resolves once events published from now on to a subscribed channel will reach this process. */
  whenSubscribed?(channel: string): Promise<void>;
  /**
   * Publishes a wake-up for the worker job `job` to every process listening with onWake, this one
   * included. Only the Redis channel carries them (redis:url); null when it was not sent (no Redis,
   * Redis not connected, too many publishes unanswered). The promise never rejects: it resolves with
   * how many processes received it, 0 when the publish failed or was not answered in time.
   */
  wakeAll?(job: string): Promise<number> | null;
  /**
   * Calls `handler` with the job of each wake-up published on the shared channel (any process); an
   * unparsable message is dropped with a warning, the job name is not checked here. Resolves once
   * Redis has confirmed the subscription, with the function that ends it; null without Redis.
   */
  onWake?(handler: WakeHandler): Promise<(() => Promise<void>) | null>;
  close(): Promise<void>;
}

/** Receives the job name of a wake-up (lib/ingest/wake.ts names the jobs; the worker checks it). */
export type WakeHandler = (job: string) => void;

/** What travels between processes. `o` is the sending bus (a bus ignores its own echo), `t` the publish time (ms). */
export type WireMessage =
  | { k: 'e'; o: string; t: number; ch: string[]; ev: EntityEvent }
  | { k: 'm'; o: string; t: number; kind: MailEventKind; p: Record<string, unknown> };

/** A cross-process carrier: Redis pub/sub or the embedded hub. */
export interface Transport {
  readonly name: 'redis' | 'hub';
  start(deliver: (msg: WireMessage) => void): Promise<void>;
  send(msg: WireMessage): void;
  /** This process has (or no longer has) a local handler for the channel; Redis subscribes by channel. */
  watch(channel: string): void;
  unwatch(channel: string): void;
  /** Resolves when a watched channel is really listened to (Redis confirms subscriptions asynchronously). */
  ready?(channel: string): Promise<void>;
  /** Worker wake-ups between processes and hosts (EventBus.wakeAll, onWake): Redis only. */
  wakeAll?(job: string): Promise<number> | null;
  onWake?(handler: WakeHandler): Promise<() => Promise<void>>;
  close(): Promise<void>;
}
