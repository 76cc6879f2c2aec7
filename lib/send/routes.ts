import express, { type Request, type RequestHandler, type Response, type Router } from 'express';
import { rateLimit } from 'express-rate-limit';
import { z } from 'zod';
import { ApiError, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { mailPort, recordingOutbound } from '../ingest/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Deps } from '../context/index.js';
import { realScanners } from '../scan/index.js';
import { outboundTransport } from './dev-transport.js';
import type { SendDeps } from './dispatch.js';
import { recallMessage } from './recall.js';
import { answerReceipt } from './receipts.js';
import { sendDraft } from './service.js';

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

  router.post('/api/mail/messages/:id/send', perUser, async (req: Request, res: Response, next) => {
    try {
      const r = await sendDraft(ctxOf(req, deps), send, decls(), String(req.params.id), req.body);
      res.status(r.status).json(r.body);
    } catch (e) {
      next(e);
    }
  });
  openapi.add('post', '/api/mail/messages/:id/send', {
    operationId: 'mail_messages_send',
    summary:
      'Send a draft: From and Sender checked (403), outbound scan (422), relay (502 with reasons when no recipient is accepted); background → 202 and the Outbox; a draft with a future sendAt (set through compose, or sendAt here) → 202 state scheduled: it stays in Drafts until then (deleting or replacing it cancels the send)',
    tags,
    auth: 'signed-in',
    requestBody: {
      schema: { type: 'object', properties: { background: { type: 'boolean' }, sendAt: { type: 'string', format: 'date-time' } } },
    },
    responses: {
      200: { description: 'sent: {uid, state, accepted, refused, pending}' },
      202: { description: 'queued in the Outbox' },
      422: {
        description:
          "api-114: refused by the outbound scan; api-121: refused by the encryption policy (plaintext where it says automatic and the recipient's key is known or pinned, ciphertext where it says prohibited)",
      },
    },
  });

  router.post('/api/mail/messages/:id/recall', async (req: Request, res: Response, next) => {
    try {
      res.json(await recallMessage(ctxOf(req, deps), send, decls(), String(req.params.id)));
    } catch (e) {
      next(e);
    }
  });
  openapi.add('post', '/api/mail/messages/:id/recall', {
    operationId: 'mail_messages_recall',
    summary:
      "Recall a message in Sent Items: internal recipients' unread copies are withdrawn by a control message; the sender gets a report",
    tags,
    auth: 'signed-in',
    responses: { 200: { description: '{recalled, recipients}' } },
  });

  const receiptBody = z
    .object({ send: z.boolean().default(true) })
    .strict()
    .default({ send: true });
  router.post('/api/mail/messages/:id/receipt', async (req: Request, res: Response, next) => {
    try {
      const body = parseOrThrow(receiptBody, req.body ?? {}, 'invalid receipt answer');
      res.json(await answerReceipt(ctxOf(req, deps), decls(), String(req.params.id), body.send));
    } catch (e) {
      next(e);
    }
  });
  openapi.add('post', '/api/mail/messages/:id/receipt', {
    operationId: 'mail_messages_receipt',
    tags,
    auth: 'signed-in',
    summary:
      "Answer a read-receipt request of a message that was read: send (an RFC 8098 receipt, manual-action) or decline. Where the mailbox's receiptSettings say always or never the send job decides alone; at most one receipt per message",
    requestBody: { schema: { type: 'object', properties: { send: { type: 'boolean', default: true } } } },
    responses: {
      200: { description: '{uid, messageUid, to, state: approved | declined}' },
      409: { description: 'api-120: no receipt asked for, not read yet, or already sent or declined' },
    },
  });
  return router;
}
