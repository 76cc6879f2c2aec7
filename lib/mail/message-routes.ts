import express, { type Request, type Response, type Router } from 'express';
import { MailParser, type AttachmentStream } from 'mailparser';
import { z } from 'zod';
import { ApiError, notFound } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { checkRecord, parseOrThrow, type ResourceService } from '../resources/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { addBlobRefs, BlobModel } from '../storage/index.js';
import { blobsOf, countIn, folderOf, publishFolder, publishMessage, type MessageRecord } from './filing.js';
import { FolderModel, type Folder } from './folders.js';
import { MailboxModel } from './mailboxes.js';
import { moveMessage, unfile } from './messages-resource.js';
import { MessageModel, parseMessage, type Message } from './messages.js';
import { sanitizeMailHtml } from '../scan/index.js';
import { safeFilename, withSafeNames } from './attachment-names.js';
import { searchDocument } from './search.js';

const moveBody = z.object({ folderUid: z.string().min(1), version: z.number().int().positive().optional() }).strict();
const EMPTY_BATCH = 500;

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

/**
 * A download never renders in the browser: attachment disposition, no sniffing, a sandbox CSP. The
 * name is a safe one (attachment-names.ts): the sender's name may be a path or hold control characters.
 */
function downloadHeaders(res: Response, filename: string, contentType: string): void {
  res.attachment(filename);
  res.set({ 'Content-Type': contentType, 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; sandbox" });
}

export function messageRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const wrap = (fn: Handler) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
    try {
      await fn(ctxOf(req, deps), req, res);
    } catch (e) {
      next(e);
    }
  };
  const messages = () => service.registry.get('messages');
  /** A message as every route answers it: hidden fields dropped, safe attachment names added. */
  const shown = (m: object) => service.view(messages(), m as never);
  const folders = () => service.registry.get('folders');
  const load = async (ctx: Ctx, uid: string, right: 'read' | 'write' = 'read') =>
    (await service.load(ctx, messages(), uid, right)) as unknown as MessageRecord;
  /** The target folder must be in the same mailbox and open to the caller for new items. */
  async function target(ctx: Ctx, msg: MessageRecord, folderUid: string): Promise<Folder & { uid: string }> {
    const f = (await service.load(ctx, folders(), folderUid, 'read')) as unknown as Folder & { uid: string };
    if (f.mailboxUid !== msg.mailboxUid) throw new ApiError('api-106', 'messages move and copy only between folders of the same mailbox');
    await checkRecord(ctx, folders(), f as never, 'create');
    return f;
  }
  const tags = ['mail/messages'];

  router.post(
    '/api/mail/messages/:id/move',
    wrap(async (ctx, req, res) => {
      const body = parseOrThrow(moveBody, req.body, 'move takes {folderUid, version}');
      const msg = await load(ctx, String(req.params.id), 'write');
      res.json(shown(await moveMessage(ctx, msg, await target(ctx, msg, body.folderUid), body.version)));
    }),
  );
  openapi.add('post', '/api/mail/messages/:id/move', {
    operationId: 'mail_messages_move',
    summary: 'Move a message to another folder of its mailbox (counters follow)',
    tags,
    auth: 'signed-in',
    requestBody: {
      schema: { type: 'object', required: ['folderUid'], properties: { folderUid: { type: 'string' }, version: { type: 'integer' } } },
    },
    responses: { 200: { description: 'the moved message' } },
  });

  router.post(
    '/api/mail/messages/:id/copy',
    wrap(async (ctx, req, res) => {
      const body = parseOrThrow(moveBody.omit({ version: true }), req.body, 'copy takes {folderUid}');
      const msg = await load(ctx, String(req.params.id));
      const f = await target(ctx, msg, body.folderUid);
      const { uid: _u, version: _v, createdAt: _c, updatedAt: _up, ...fields } = msg;
      // The copy is searchable like the original (the document comes from the stored source; ciphertext has none).
      const doc =
        msg.smime === 'encrypted'
          ? searchDocument({ fields: msg, text: '' })
          : searchDocument(await parseMessage(await blobsOf(ctx).get(msg.blobId)));
      const { copy, folder } = await ctx.store.transaction(async (tx) => {
        const c = await tx.repo<Message>(MessageModel).create({ ...(withSafeNames(fields) as Message), folderUid: f.uid, ingestKey: null });
        await tx.repo<Message>(MessageModel).setText(c.uid, doc);
        await tx.repo(MailboxModel).increment(msg.mailboxUid, { usedBytes: msg.size });
        await addBlobRefs(tx, [{ blobId: msg.blobId, sha256: msg.blobId, size: msg.size }]);
        return { copy: c, folder: await countIn(tx, f.uid, 1, msg.seen ? 0 : 1) };
      });
      publishMessage(ctx, 'create', copy);
      publishFolder(ctx, folder);
      res.status(201).json(shown(copy));
    }),
  );
  openapi.add('post', '/api/mail/messages/:id/copy', {
    operationId: 'mail_messages_copy',
    summary: 'Copy a message into another folder of its mailbox (the raw source is shared, not duplicated)',
    tags,
    auth: 'signed-in',
    requestBody: { schema: { type: 'object', required: ['folderUid'], properties: { folderUid: { type: 'string' } } } },
    responses: { 201: { description: 'the copy' } },
  });

  router.get(
    '/api/mail/messages/:id/raw',
    wrap(async (ctx, req, res) => {
      const msg = await load(ctx, String(req.params.id));
      downloadHeaders(res, `${msg.uid}.eml`, 'message/rfc822');
      res.set('Content-Length', String(msg.size));
      await new Promise<void>((resolve, reject) =>
        blobsOf(ctx).stream(msg.blobId).on('error', reject).pipe(res).on('finish', resolve).on('error', reject),
      );
    }),
  );
  openapi.add('get', '/api/mail/messages/:id/raw', {
    operationId: 'mail_messages_raw',
    summary: 'The raw RFC 5322 source (message/rfc822), streamed',
    tags,
    auth: 'signed-in',
    responses: { 200: { description: 'message/rfc822', contentType: 'message/rfc822', schema: { type: 'string' } } },
  });

  router.get(
    '/api/mail/messages/:id/body',
    wrap(async (ctx, req, res) => {
      const msg = await load(ctx, String(req.params.id));
      if (msg.smime === 'encrypted') {
        // Spec: the server never sees the content of an encrypted message; the client decrypts the raw source.
        res.json({ encrypted: true, text: null, html: null });
        return;
      }
      const parsed = await parseMessage(await blobsOf(ctx).get(msg.blobId));
      res.json({ encrypted: false, text: parsed.text, html: parsed.html === null ? null : sanitizeMailHtml(parsed.html) });
    }),
  );
  openapi.add('get', '/api/mail/messages/:id/body', {
    operationId: 'mail_messages_body',
    summary:
      'The text and the sanitized HTML body (scripts, handlers and remote-loading constructs removed); for S/MIME ciphertext only {encrypted: true}',
    tags,
    auth: 'signed-in',
    responses: {
      200: {
        description: '{encrypted, text, html}',
        schema: {
          type: 'object',
          properties: { encrypted: { type: 'boolean' }, text: { type: ['string', 'null'] }, html: { type: ['string', 'null'] } },
        },
      },
    },
  });

  router.get(
    '/api/mail/messages/:id/attachments/:attachmentId',
    wrap(async (ctx, req, res) => {
      const msg = await load(ctx, String(req.params.id));
      const want = msg.attachments.find((a) => a.id === String(req.params.attachmentId));
      if (!want) throw notFound('No such attachment');
      // Stream the one attachment out of the raw source; the others are released unread.
      await new Promise<void>((resolve, reject) => {
        const parser = new MailParser({ skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: true });
        let n = 0;
        let sent = false;
        parser.on('data', (part: { type: string } & Partial<AttachmentStream>) => {
          if (part.type !== 'attachment') return;
          n += 1;
          const a = part as AttachmentStream;
          if (String(n) !== want.id || sent) {
            a.content.resume();
            a.content.on('end', () => a.release?.());
            return;
          }
          sent = true;
          if (res.headersSent) {
            // Answered already (request_timeout_ms): setting headers here, outside the route's try,
            // would throw where nothing catches it.
            a.content.resume();
            a.content.on('end', () => a.release?.());
            reject(new Error('the request was answered before the attachment was found'));
            return;
          }
          downloadHeaders(res, safeFilename(want.filename, `attachment-${want.id}`), want.contentType || 'application/octet-stream');
          res.on('finish', resolve);
          res.on('close', resolve); // a client that went away: nothing left to wait for
          res.on('error', reject);
          a.content.pipe(res);
          a.content.on('end', () => a.release?.());
        });
        parser.on('end', () => {
          if (!sent) reject(notFound('No such attachment'));
        });
        parser.on('error', reject);
        blobsOf(ctx).stream(msg.blobId).on('error', reject).pipe(parser);
      });
    }),
  );
  openapi.add('get', '/api/mail/messages/:id/attachments/:attachmentId', {
    operationId: 'mail_messages_attachment',
    summary:
      'One attachment, streamed with its Content-Type and an attachment Content-Disposition naming its safeFilename (never rendered inline)',
    tags,
    auth: 'signed-in',
    responses: {
      200: { description: 'the attachment bytes', contentType: 'application/octet-stream', schema: { type: 'string', format: 'binary' } },
    },
  });

  router.post(
    '/api/mail/messages/:id/trash',
    wrap(async (ctx, req, res) => {
      // Deleted Items semantics: deleting elsewhere moves the message to Deleted Items; deleting there removes it for good.
      const msg = await load(ctx, String(req.params.id), 'write');
      const trash = await folderOf(ctx.store, msg.mailboxUid, { folderRole: 'trash' });
      if (msg.folderUid !== trash.uid) {
        res.json(shown(await moveMessage(ctx, msg, await target(ctx, msg, trash.uid))));
        return;
      }
      await service.remove(ctx, messages(), msg.uid, msg.version);
      res.status(204).end();
    }),
  );
  openapi.add('post', '/api/mail/messages/:id/trash', {
    operationId: 'mail_messages_trash',
    summary:
      'Delete the Deleted Items way: a message elsewhere moves to Deleted Items (200, the moved message); one already there is removed for good (204)',
    tags,
    auth: 'signed-in',
    responses: { 200: { description: 'moved to Deleted Items' }, 204: { description: 'removed permanently' } },
  });

  router.post(
    '/api/mail/folders/:id/empty',
    wrap(async (ctx, req, res) => {
      const folder = (await service.load(ctx, folders(), String(req.params.id), 'write')) as unknown as Folder & { uid: string };
      await service.load(ctx, folders(), folder.uid, 'delete');
      let removed = 0;
      for (;;) {
        const batch = await ctx.store.repo<Message>(MessageModel).list({ filter: { folderUid: folder.uid }, limit: EMPTY_BATCH });
        if (!batch.length) break;
        const freed: string[] = [];
        await ctx.store.transaction(async (tx) => {
          for (const m of batch) {
            if (await tx.repo(MessageModel).delete(m.uid)) {
              await unfile(tx, m as never);
              removed += 1;
              freed.push(m.blobId);
            }
          }
        });
        for (const b of new Set(freed)) if (!(await ctx.store.repo(BlobModel).get(b))) await blobsOf(ctx).remove(b);
      }
      const after = await ctx.store.repo<Folder>(FolderModel).get(folder.uid);
      publishFolder(ctx, after);
      res.json({ removed, folder: after });
    }),
  );
  openapi.add('post', '/api/mail/folders/:id/empty', {
    operationId: 'mail_folders_empty',
    summary: 'Delete every message of a folder (permanently; Deleted Items is emptied this way)',
    tags: ['mail/folders'],
    auth: 'signed-in',
    responses: { 200: { description: '{removed, folder}' } },
  });
  return router;
}
