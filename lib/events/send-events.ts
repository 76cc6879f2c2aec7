import type { EventBus } from './types.js';

/** Spec: Events 8 — send events go out on mailbox and folder channels. */
export const SEND_EVENT_TYPES = ['send-succeeded', 'send-retrying', 'send-failed'] as const;
export type SendEventType = (typeof SEND_EVENT_TYPES)[number];

export interface SendEventInput {
  mailboxUid: string;
  /** The folders the client shows the message in (Outbox, Sent Items, Drafts …). */
  folderUids?: readonly string[];
  messageUid: string;
  /** send-retrying: when the next attempt is due; send-failed: the refused recipients and reasons. */
  data?: Record<string, unknown>;
}

/**
 * For the send paths (background send, the Outbox job): one call puts the event on the mailbox
 * channel and on each folder channel. Frame data: {type: <send event>, action: 'update',
 * data: {messageUid, mailboxUid, …}}.
 */
export function publishSendEvent(events: EventBus, type: SendEventType, input: SendEventInput): void {
  const channels = [input.mailboxUid, ...(input.folderUids ?? [])];
  events.publish(channels, { type, action: 'update', data: { ...input.data, messageUid: input.messageUid, mailboxUid: input.mailboxUid } });
}
