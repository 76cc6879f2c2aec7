import express, { type RequestHandler, type Router } from 'express';
import { rateLimit } from 'express-rate-limit';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { mailPort, recordingOutbound } from '../ingest/index.js';
import { emailAddress, RECEIPT_STATES } from '../mail/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Deps } from '../context/index.js';
import { realScanners } from '../scan/index.js';
import { outboundTransport } from './dev-transport.js';
import type { SendDeps } from './dispatch.js';
import { encryptionPlan, encryptionPlanAnswer } from './encryption-plan.js';
import { OUTBOUND_STATES } from './models.js';
import { recallMessage } from './recall.js';
import { answerReceipt } from './receipts.js';
import { sendBody, sendDraft } from './service.js';

/** What the send path needs beyond the common deps: inbound hand-off, transport, scanners. */
export function sendDepsOf(deps: Deps, over: Partial<SendDeps> = {}): SendDeps {
  const port = mailPort(deps);
  return {
    ...deps,
    port,
    outbound: recordingOutbound(deps, port),
    transport: outboundTransport(deps.config),
    scanners: realScanners(deps.config),
    ...over,
  };
}

/** What a send answers (200 sent, 202 queued or scheduled): the Outbox record of the send. */
const sendAnswer = z.object({
  uid: z.string(),
  state: z.enum([...OUTBOUND_STATES, 'scheduled']),
  messageUid: z.string().nullable(),
  messageId: z.string(),
  accepted: z.array(z.string()),
  refused: z.array(z.object({ rcpt: z.string(), reason: z.string(), permanent: z.boolean() })),
  pending: z.array(z.string()),
  nextAttemptAt: z.iso.datetime(),
  attempts: z.number().int(),
  sendAt: z.iso.datetime().optional().describe('a scheduled send: when it goes'),
});

/** The answer to a read-receipt request: send it (the default) or decline. */
const receiptBody = z.strictObject({ send: z.boolean().default(true) }).default({ send: true });

/**
 * Spec: Service-specific routes — send and recall. The send route is limited per user (Spec:
 * Limits) by `limiter` (the api app passes lib/http's perUser limiter, shared through Redis when
 * configured); without one, an in-process express-rate-limit keyed by the principal's uid.
 */
export function sendRouter(
  service: ResourceService,
  deps: Deps,
  openapi: OpenApiRegistry,
  opts: { limiter?: RequestHandler; over?: Partial<SendDeps> } = {},
): Router {
  const router = express.Router();
  const send = sendDepsOf(deps, opts.over);
  // Looked up per request, like the other feature routers: an app built on a registry without mail
  // resources (tests, a trimmed daemon) still builds.
  const decls = () => ({
    messages: service.registry.get('messages'),
    mailboxes: service.registry.get('mailboxes'),
    load: service.load.bind(service),
  });
  const perUser =
    opts.limiter ??
    rateLimit({
      windowMs: deps.config.get('mail:send:rate_limit:window_ms'),
      limit: deps.config.get('mail:send:rate_limit:max'),
      standardHeaders: 'draft-7',
      legacyHeaders: false,
      validate: false,
      keyGenerator: (req) => `send:${req.principal?.uid ?? 'anonymous'}`,
      handler: (_req, _res, next, opts) =>
        next(
          new ApiError('api-109', 'too many sends; retry later', { headers: { 'Retry-After': String(Math.ceil(opts.windowMs / 1000)) } }),
        ),
    });
  const tags = ['mail/messages'];

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/send',
    operationId: 'mail_messages_send',
    summary:
      'Send a draft: From and Sender checked (403), outbound scan (422), relay (502 with reasons when no recipient is accepted); background → 202 and the Outbox; a draft with a future sendAt (set through compose, or sendAt here) → 202 state scheduled: it stays in Drafts until then (deleting or replacing it cancels the send)',
    tags,
    auth: 'signed-in',
    before: [perUser],
    body: sendBody,
    rawResponse: {
      description: '200 sent: {uid, state, accepted, refused, pending}; 202 queued in the Outbox, or scheduled (state scheduled, sendAt)',
      schema: sendAnswer,
    },
    errors: {
      422: "api-114: refused by the outbound scan; api-121: refused by the encryption policy (plaintext where it says automatic and the recipient's key is known or pinned, ciphertext where it says prohibited)",
      502: 'api-115: no recipient was accepted (details: each recipient and why)',
    },
    handler: async (ctx, { params, body }, _req, res) => {
      const r = await sendDraft(ctx, send, decls(), params.id, body);
      res.status(r.status).json(r.body);
    },
  });

  encryptionPlanRoute(router, deps, openapi);

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/recall',
    operationId: 'mail_messages_recall',
    summary:
      "Recall a message in Sent Items: internal recipients' unread copies are withdrawn by a control message; the sender gets a report",
    tags,
    auth: 'signed-in',
    response: z.object({
      recalled: z.array(z.string()).describe('internal recipients a recall was sent to'),
      notRecalled: z.array(z.string()).describe('external recipients: cannot be recalled'),
      messageId: z.string(),
    }),
    handler: (ctx, { params }) => recallMessage(ctx, send, decls(), params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/receipt',
    operationId: 'mail_messages_receipt',
    tags,
    auth: 'signed-in',
    summary:
      "Answer a read-receipt request of a message that was read: send (an RFC 8098 receipt, manual-action) or decline. Where the mailbox's receiptSettings say always or never the send job decides alone; at most one receipt per message",
    body: receiptBody,
    response: z.object({
      uid: z.string(),
      messageUid: z.string(),
      to: z.string(),
      state: z.enum(RECEIPT_STATES).describe('approved or declined'),
    }),
    errors: { 409: 'api-120: no receipt asked for, not read yet, or already sent or declined' },
    handler: (ctx, { params, body }) => answerReceipt(ctx, decls(), params.id, body.send),
  });
  return router;
}

/** What a send to some recipients needs for encryption, asked by the compose view (lib/send/encryption-plan.ts). */
function encryptionPlanRoute(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/mailboxes/:id/keys/recipients',
    operationId: 'keys_recipients_plan',
    summary: "What a send to these recipients needs for encryption: each one's class, the policy's rule and the key to encrypt to",
    description:
      "For the compose view, before it builds the message: the classes (sameOrg, federated, external), rules and keys the send path checks (federated keys are looked up and pinned on first use, as GET keys/lookup does). encryptable: every recipient has a key and no rule prohibits encryption; plaintextAllowed: the send would take the message unencrypted (no rule says automatic for a recipient whose key is known, no recipient's key is pinned).",
    tags: ['keys'],
    auth: 'signed-in',
    query: z.object({
      addr: z
        .string()
        .transform((s) => s.split(',').filter((a) => a.trim()))
        .pipe(z.array(emailAddress).min(1).max(100))
        .describe('the recipients, comma-separated (at most 100)'),
    }),
    response: encryptionPlanAnswer,
    errors: { 404: 'api-107: no such mailbox, or one the caller cannot see (trusted roles do not count)' },
    handler: (ctx, { params, query }) => encryptionPlan(ctx, params.id, query.addr),
  });
}
