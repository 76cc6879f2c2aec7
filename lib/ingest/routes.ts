import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type FailureCounters, type OpenApiRegistry } from '../http/index.js';
import { blobsOf } from '../mail/index.js';
import type { IngestDeps } from './accept.js';
import { envelopeOf } from './envelope.js';
import { checkIngestSecret, ingestGuard } from './guard.js';
import { deliverStaged, lookupDomain, lookupRecipient } from './handoff.js';
import { receiveBody } from './receive-body.js';
import { wakeWorkers } from './wake.js';

// The fuzz target of the envelope reads it here.
export { envelopeOf } from './envelope.js';

const tags = ['internal/mta'];
const auth = 'ingest-secret' as const;
const err403 = 'guard refused (wrong secret, proxy header) or the domain is not served: api-119';
const err429 = 'too many wrong secrets from this address (mail:internal:max_failures): api-109 with Retry-After';
const err400 = (what: string) =>
  `api-106: ${what} malformed (not a plain address or domain, bad percent-encoding, or a control character after decoding); details name it`;
/** A lookup's query value: a missing or repeated parameter is 400 api-106 with the detail "required". */
const lookupQuery = (name: string) => z.object({ [name]: z.string({ error: 'required' }) });

const handoffResult = z.object({
  transactionId: z.string(),
  queued: z.number().int(),
  results: z.array(
    z.object({
      recipient: z.string(),
      status: z.enum(['queued', 'duplicate', 'relayed', 'unknown', 'rejected']),
      mailboxes: z.number().int().optional(),
      reason: z.string().optional(),
    }),
  ),
});

/** The hand-off's envelope travels in request headers (read by envelope.ts). */
const ENVELOPE_HEADERS = [
  { name: 'X-Envelope-From', description: 'the envelope sender (empty for bounces)' },
  { name: 'X-Envelope-To', required: true, description: 'the recipients, comma-separated and percent-encoded' },
  {
    name: 'X-Transaction-Id',
    description: 'the SMTP transaction (e.g. the Postfix queue id); a retried hand-off of it creates no duplicate',
  },
  {
    name: 'X-Envelope-Client-Address',
    description:
      "the SMTP client's IP address (Postfix ${client_address}); given to rspamd as IP for SPF, DMARC and the IP lists. 'unknown' counts as absent; not an address: 400 api-106",
  },
  {
    name: 'X-Envelope-Client-Helo',
    description:
      'the HELO/EHLO name the client gave, percent-encoded (${client_helo}); one that is not printable ASCII without spaces is left out',
  },
  {
    name: 'X-Envelope-Client-Hostname',
    description: "the client's verified reverse-DNS name (${client_hostname}); 'unknown' counts as absent; not a host name: 400 api-106",
  },
];

export interface IngestRouterOptions {
  onQueued?: () => void;
  /** The wrong-secret counters: the rate limits' `failures('ingest')` (shared through Redis with redis:url). */
  failures?: FailureCounters;
}

/**
 * Spec: Internal mail hand-off (no JWT). Mounted before the JSON body parser and the JWT
 * middleware: the body is a raw message, the guard is the ingest secret.
 */
export function ingestRouter(deps: IngestDeps, openapi: OpenApiRegistry, opts: IngestRouterOptions = {}): Router {
  checkIngestSecret(deps.config);
  const router = express.Router();
  const guard = ingestGuard(deps.config, { failures: opts.failures, log: deps.log });
  const onQueued = opts.onQueued ?? (() => wakeWorkers(deps, 'scan'));

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/internal/mta/domain',
    operationId: 'mta_domain',
    summary: 'Does the service accept mail for this domain',
    description: 'An enabled, verified domain (or one of its aliases) answers 200; any other answers 403 api-119 (never 404).',
    tags,
    auth,
    before: [guard],
    query: lookupQuery('name'),
    response: z.object({ name: z.string(), accepted: z.boolean(), canonical: z.string() }),
    errors: { 400: err400('name'), 403: err403, 429: err429 },
    handler: (_ctx, { query }) => lookupDomain(deps, query.name),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/internal/mta/resolve',
    operationId: 'mta_resolve',
    summary: 'Does this recipient exist',
    description:
      'Resolution order: primary address, alias (also through domain aliases), distribution list, plus-addressing. 404 means permanent rejection of the recipient.',
    tags,
    auth,
    before: [guard],
    query: lookupQuery('rcpt'),
    response: z.object({ rcpt: z.string(), exists: z.boolean(), kind: z.enum(['mailbox', 'list']) }),
    errors: { 400: err400('rcpt'), 403: err403, 404: 'no such recipient (permanent)', 429: err429 },
    handler: (_ctx, { query }) => lookupRecipient(deps, query.rcpt),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/internal/mta/deliver',
    operationId: 'mta_deliver',
    headers: ENVELOPE_HEADERS,
    summary: 'Hand an inbound message to the service',
    description:
      'The body is the raw message (streamed; limit mail:ingest:max_message_bytes, else 413 api-110). X-Envelope-From is the envelope sender; X-Envelope-To the recipients, comma-separated and percent-encoded. X-Transaction-Id (optional, e.g. the Postfix queue id) identifies the SMTP transaction; without it the transaction is the message bytes plus the envelope. A retried hand-off of the same transaction creates no duplicate. Every entry is durable before the 202.',
    tags,
    auth,
    before: [guard],
    rawBody: { contentType: 'message/rfc822', description: 'the raw message (binary)' },
    status: 202,
    response: handoffResult,
    errors: {
      400: err400('X-Envelope-From, X-Envelope-To, X-Envelope-Client-Address or X-Envelope-Client-Hostname'),
      403: err403,
      413: 'message over mail:ingest:max_message_bytes',
      429: err429,
    },
    // The envelope is checked before the body is read; the body streams to a staged blob (never whole in memory).
    handler: async (_ctx, _input, req) => {
      const envelope = envelopeOf((name) => req.header(name), deps.config.get('mail:ingest:max_recipients'));
      const body = await receiveBody(req, blobsOf(deps), deps.config.get('mail:ingest:max_message_bytes'));
      const out = await deliverStaged(deps, body, envelope);
      if (out.queued) onQueued();
      return out;
    },
  });

  // A path under /internal/mta that no route answers is guarded too: a wrong secret is 403 there as
  // well (never a 404, which tells the MTA to reject permanently); the right one falls through to 404.
  router.use('/internal/mta', guard);
  return router;
}
