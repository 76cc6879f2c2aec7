import express, { type Response, type Router } from 'express';
import { z } from 'zod';
import { defineRoute, streamTo, type OpenApiRegistry } from '../http/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import { messagesResource } from './messages-resource.js';
import { foldersResource } from './folders.js';
import type { Ctx, Deps } from '../context/index.js';
import { blobsOf } from './filing.js';
import { bodyOf, isSafeSender, messageActions, openAttachment, type MessageActions } from './message-actions.js';
import { messageView } from './message-view.js';
import { RECEIPT_STATES, ReadReceiptModel, receiptUid, type ReadReceipt } from './receipts.js';

/**
 * A download never renders in the browser: attachment disposition, no sniffing, a sandbox CSP. The
 * name is a safe one (attachment-names.ts): the sender's name may be a path or hold control characters.
 */
function downloadHeaders(res: Response, filename: string, contentType: string): void {
  res.attachment(filename);
  res.set({ 'Content-Type': contentType, 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; sandbox" });
}

const folderTarget = z.strictObject({ folderUid: z.string().min(1) });

interface MessageRoutes {
  router: Router;
  deps: Deps;
  openapi: OpenApiRegistry;
  act: MessageActions;
}

// The answers' shapes come from the declarations; the registry (which may lack them) is read per request.
const message = schemasOf(messagesResource).record;
const folder = schemasOf(foldersResource).record;
const tags = ['mail/messages'];

/** The message routes beyond the generic ones: move, copy, raw source, body, its framed view, attachment, Deleted Items, empty a folder. */
export function messageRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const routes: MessageRoutes = { router: express.Router(), deps, openapi, act: messageActions(service) };
  placementRoutes(routes);
  contentRoutes(routes);
  return routes.router;
}

/** Where a message is: move, copy, Deleted Items, empty a folder. */
function placementRoutes({ router, deps, openapi, act }: MessageRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/move',
    operationId: 'mail_messages_move',
    summary: 'Move a message to another folder of its mailbox (counters follow)',
    tags,
    auth: 'signed-in',
    body: folderTarget.extend({ version: z.number().int().positive().optional() }),
    response: message,
    handler: (ctx, { params, body }) => act.move(ctx, params.id, body.folderUid, body.version),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/copy',
    operationId: 'mail_messages_copy',
    summary: 'Copy a message into another folder of its mailbox (the raw source is shared, not duplicated)',
    tags,
    auth: 'signed-in',
    body: folderTarget,
    status: 201,
    response: message,
    handler: (ctx, { params, body }) => act.copy(ctx, params.id, body.folderUid),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/messages/:id/trash',
    operationId: 'mail_messages_trash',
    summary:
      'Delete the Deleted Items way: a message elsewhere moves to Deleted Items (200, the moved message); one already there is removed for good (204)',
    tags,
    auth: 'signed-in',
    rawResponse: { description: '200 with the message moved to Deleted Items, or 204 when it was removed permanently', schema: message },
    handler: async (ctx, { params }, _req, res) => {
      const moved = await act.trash(ctx, params.id);
      if (moved) res.json(moved);
      else res.status(204).end();
    },
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/folders/:id/empty',
    operationId: 'mail_folders_empty',
    summary: 'Delete every message of a folder (permanently; Deleted Items is emptied this way)',
    tags: ['mail/folders'],
    auth: 'signed-in',
    response: z.object({ removed: z.number().int(), folder }),
    handler: (ctx, { params }) => act.emptyFolder(ctx, params.id),
  });
}

/** What a message holds: the raw source, the body, one attachment. */
function contentRoutes({ router, deps, openapi, act }: MessageRoutes): void {
  /** The body for the web app's reader (one load of the message), with whether its sender is a verified Safe Sender and where its read receipt stands. */
  const readerBody = async (ctx: Ctx, uid: string) => {
    const msg = await act.load(ctx, uid);
    const receipt: ReadReceipt['state'] | 'not-read' | null = msg.receiptTo
      ? ((await ctx.store.repo<ReadReceipt>(ReadReceiptModel).get(receiptUid(msg.mailboxUid, msg.messageId, msg.uid)))?.state ?? 'not-read')
      : null;
    const body = await bodyOf(ctx, msg, { inlineImages: true });
    return { ...body, senderVerified: msg.senderVerified, safeSender: await isSafeSender(ctx, msg), receipt };
  };

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/messages/:id/raw',
    operationId: 'mail_messages_raw',
    summary: 'The raw RFC 5322 source (message/rfc822), streamed',
    tags,
    auth: 'signed-in',
    rawResponse: { description: 'the raw source', contentType: 'message/rfc822' },
    handler: async (ctx, { params }, _req, res) => {
      const msg = await act.load(ctx, params.id);
      downloadHeaders(res, `${msg.uid}.eml`, 'message/rfc822');
      res.set('Content-Length', String(msg.size));
      await streamTo(res, blobsOf(ctx).stream(msg.blobId));
    },
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/messages/:id/body',
    operationId: 'mail_messages_body',
    summary:
      'The text and the sanitized HTML body (scripts, handlers and remote-loading constructs removed); for S/MIME ciphertext only {encrypted: true}',
    tags,
    auth: 'signed-in',
    response: z.object({
      encrypted: z.boolean(),
      text: z.string().nullable(),
      html: z.string().nullable(),
      senderVerified: z
        .boolean()
        .describe('delivery verified the sender (the trusted Authentication-Results); Safe Senders count only then'),
      safeSender: z
        .boolean()
        .describe("the verified sender is on the mailbox's Safe Senders: the view loads its remote images without remote=allow"),
      receipt: z
        .enum([...RECEIPT_STATES, 'not-read'])
        .nullable()
        .describe(
          'null: no read receipt asked for (or the sender is not verified); not-read: owed once read; pending: the send job decides by the receipt settings; ask: the settings say ask — answer with POST /receipt; approved, sent, declined: decided',
        ),
    }),
    handler: (ctx, { params }) => readerBody(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/messages/:id/view',
    operationId: 'mail_messages_view',
    summary:
      'The body as an HTML document for a sandboxed frame of the web app: no script, nothing loaded from elsewhere unless remote=allow',
    description:
      "The sanitized HTML (or the text) as a document under its own Content-Security-Policy: sandboxed (no script, links open a new tab), framed only by this service's pages, and loading no remote image, stylesheet image or font — which would tell the sender the message was opened — unless remote=allow or the sender was verified and is on the mailbox's Safe Senders. S/MIME ciphertext answers a document saying so.",
    tags,
    auth: 'signed-in',
    query: z.object({ remote: z.enum(['block', 'allow']).default('block').describe('allow: load remote images and fonts') }),
    rawResponse: { description: 'text/html', contentType: 'text/html' },
    handler: async (ctx, { params, query }, _req, res) => {
      const msg = await act.load(ctx, params.id);
      const remote = query.remote === 'allow' || (await isSafeSender(ctx, msg));
      const view = messageView(await bodyOf(ctx, msg, { inlineImages: true }), remote);
      res.removeHeader('X-Frame-Options'); // frame-ancestors 'self' below says who may frame it
      res.set({ 'Content-Security-Policy': view.policy, 'X-Content-Type-Options': 'nosniff' });
      res.type('html').send(view.html);
    },
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/messages/:id/attachments/:attachmentId',
    operationId: 'mail_messages_attachment',
    summary:
      'One attachment, streamed with its Content-Type and an attachment Content-Disposition naming its safeFilename (never rendered inline)',
    tags,
    auth: 'signed-in',
    rawResponse: { description: 'the attachment bytes', contentType: 'application/octet-stream' },
    errors: { 404: 'api-107: no such message or attachment' },
    handler: async (ctx, { params }, _req, res) => {
      const a = await openAttachment(ctx, await act.load(ctx, params.id), params.attachmentId);
      // Answered already (request_timeout_ms): drain the part and let the error path log it.
      if (res.headersSent) {
        a.content.resume();
        throw new Error('the request was answered before the attachment was found');
      }
      downloadHeaders(res, a.filename, a.contentType);
      await streamTo(res, a.content);
    },
  });
}
