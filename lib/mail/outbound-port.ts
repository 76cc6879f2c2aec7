// The port through which mail the server itself writes goes out (non-delivery reports, list relays,
// out-of-office replies, reject notices, iTIP replies, receipts). The ingest folder implements it
// (lib/ingest/outbound.ts: recorded as an outbound hand-off, relayed by the send job); features that
// send such mail are handed one, so none of them imports another feature to reach it.

export type OutboundKind = 'ndr' | 'list-relay' | 'auto-reply' | 'reject-notice' | 'forward' | 'acme-reply' | 'itip-reply' | 'receipt';

export interface OutboundMessage {
  /** Idempotency: a second send with the same id is ignored. */
  id?: string;
  kind: OutboundKind;
  envelopeFrom: string;
  envelopeTo: string[];
  raw: Buffer;
}

export interface OutboundHook {
  send(msg: OutboundMessage): Promise<void>;
}
