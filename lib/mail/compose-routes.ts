import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { ApiError, invalid, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import {
  attachmentsOf,
  buildDraft,
  draftBody,
  fileDraft,
  mailboxFor,
  parseEncryptedDraft,
  type ComposeDecls,
  type DraftAttachment,
  type DraftBody,
} from './compose.js';
import { loadRaw, type MessageRecord } from './filing.js';
import { parseMessage } from './messages.js';

const MAX_ATTACHMENT = 25 * 1024 * 1024 + 64 * 1024;
// No path separators, control characters (Cc) or bidi embeddings, overrides and isolates: a name that
// would hide or reorder what it shows (lib/mail/attachment-names.ts makes any other name safe to show).
const filenameParam = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .regex(/^[^/\\\p{Cc}\u202A-\u202E\u2066-\u2069]+$/u, 'a plain file name: no /, \\, control or bidi characters');

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

const draftSchema = {
  type: 'object',
  required: ['mailboxUid'],
  properties: {
    mailboxUid: { type: 'string' },
    from: { type: 'string' },
    to: {
      type: 'array',
      items: { oneOf: [{ type: 'string' }, { type: 'object', properties: { address: { type: 'string' }, name: { type: 'string' } } }] },
    },
    cc: { type: 'array' },
    bcc: { type: 'array' },
    subject: { type: 'string' },
    text: { type: 'string' },
    html: { type: ['string', 'null'] },
    replyTo: { type: 'string', description: 'uid of a message of the mailbox this draft answers' },
    forwardOf: { type: 'string', description: 'uid of a message of the mailbox this draft forwards' },
    signature: { oneOf: [{ type: 'string' }, { type: 'boolean' }] },
    version: { type: 'integer' },
    sendAt: {
      type: ['string', 'null'],
      format: 'date-time',
      description:
        "scheduled send: POST /api/mail/messages/:id/send then keeps the draft in Drafts until this time; PUT without it keeps the draft's",
    },
  },
};

export function composeRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const wrap = (fn: Handler) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
    try {
      await fn(ctxOf(req, deps), req, res);
    } catch (e) {
      next(e);
    }
  };
  const decls = (): ComposeDecls => ({
    messages: service.registry.get('messages'),
    folders: service.registry.get('folders'),
    load: (ctx, decl, uid, right) => service.load(ctx, decl, uid, right),
  });
  const tags = ['mail/compose'];
  const rawBody = express.raw({ type: () => true, limit: MAX_ATTACHMENT });

  /** The draft being replaced: writable by the caller, a draft, at the version the client saw. */
  async function existingDraft(ctx: Ctx, uid: string, version: number | undefined): Promise<MessageRecord> {
    const d = decls();
    const old = (await d.load(ctx, d.messages, uid, 'write')) as unknown as MessageRecord;
    await d.load(ctx, d.messages, uid, 'delete');
    if (!old.draft) throw new ApiError('api-120', 'only drafts are changed through compose');
    if (version !== undefined && version !== old.version)
      throw new ApiError('api-108', `Version conflict: the draft is at version ${old.version}`);
    return old;
  }

  /** Files the new source, then removes the old draft exactly like DELETE (counters, usage, blob, events). */
  async function replace(
    ctx: Ctx,
    old: MessageRecord,
    raw: Buffer,
    encrypted: boolean,
    sendAt: Date | null = old.sendAt,
  ): Promise<MessageRecord> {
    const fresh = await fileDraft(ctx, old.mailboxUid, raw, encrypted ? await parseEncryptedDraft(raw) : undefined, sendAt);
    await service.remove(ctx, decls().messages, old.uid, old.version);
    return fresh;
  }

  async function keptAttachments(ctx: Ctx, old: MessageRecord): Promise<DraftAttachment[]> {
    if (old.smime === 'encrypted' || !old.hasAttachments) return [];
    return attachmentsOf(await parseMessage(await loadRaw(ctx, old.blobId)));
  }

  router.post(
    '/api/mail/compose',
    wrap(async (ctx, req, res) => {
      const body: DraftBody = parseOrThrow(draftBody, req.body, 'invalid draft');
      if (body.version !== undefined)
        throw invalid('version is for PUT /api/mail/compose/:id', [{ path: 'version', message: 'not on create' }]);
      const box = await mailboxFor(ctx, decls(), body.mailboxUid);
      res.status(201).json(await fileDraft(ctx, box.uid, await buildDraft(ctx, decls(), body, box, []), undefined, body.sendAt ?? null));
    }),
  );
  openapi.add('post', '/api/mail/compose', {
    operationId: 'mail_compose_create',
    tags,
    auth: 'signed-in',
    summary:
      'Create a draft in Drafts: the server builds the MIME message (HTML sanitized; replyTo/forwardOf quote a message of the mailbox and set In-Reply-To/References; signature: a signature uid or true for the default)',
    requestBody: { schema: draftSchema },
    responses: { 201: { description: 'the draft message (draft flag, Drafts folder)' } },
  });

  router.put(
    '/api/mail/compose/:id',
    wrap(async (ctx, req, res) => {
      const body: DraftBody = parseOrThrow(draftBody, req.body, 'invalid draft');
      const old = await existingDraft(ctx, String(req.params.id), body.version);
      if (old.mailboxUid !== body.mailboxUid)
        throw invalid('a draft stays in its mailbox', [{ path: 'mailboxUid', message: 'differs from the draft' }]);
      const box = await mailboxFor(ctx, decls(), old.mailboxUid);
      const raw = await buildDraft(ctx, decls(), body, box, await keptAttachments(ctx, old));
      res.json(await replace(ctx, old, raw, false, body.sendAt === undefined ? old.sendAt : body.sendAt));
    }),
  );
  openapi.add('put', '/api/mail/compose/:id', {
    operationId: 'mail_compose_update',
    tags,
    auth: 'signed-in',
    summary:
      'Replace a draft: a new message with the new source is filed in Drafts (uploaded attachments kept) and the old one is deleted like DELETE',
    requestBody: { schema: draftSchema },
    responses: { 200: { description: 'the new draft message (new uid)' } },
  });

  router.post(
    '/api/mail/compose/:id/attachments',
    rawBody,
    wrap(async (ctx, req, res) => {
      const filename = parseOrThrow(filenameParam, req.query.filename, 'filename (query) is required: a plain file name');
      const version = req.query.version === undefined ? undefined : Number(req.query.version);
      if (version !== undefined && !Number.isInteger(version))
        throw invalid('version must be an integer', [{ path: 'version', message: 'not an integer' }]);
      const content = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
      if (!content.length) throw invalid('the attachment is the request body', [{ path: 'body', message: 'empty' }]);
      const old = await existingDraft(ctx, String(req.params.id), version);
      if (old.smime === 'encrypted') throw new ApiError('api-120', 'an encrypted draft is replaced whole by the client');
      const box = await mailboxFor(ctx, decls(), old.mailboxUid);
      const parsed = await parseMessage(await loadRaw(ctx, old.blobId));
      const m = parsed.fields;
      const contentType =
        String(req.headers['content-type'] ?? 'application/octet-stream')
          .split(';')[0]
          .trim() || 'application/octet-stream';
      const body: DraftBody = {
        mailboxUid: old.mailboxUid,
        from: m.from?.address,
        to: m.to,
        cc: m.cc,
        bcc: m.bcc,
        subject: m.subject,
        text: parsed.text,
        html: parsed.html,
        signature: false,
      };
      const raw = await buildDraft(ctx, decls(), body, box, [...attachmentsOf(parsed), { filename, contentType, content }]);
      // The rebuilt source keeps the threading headers of the draft.
      res.status(201).json(await replace(ctx, old, withThreading(raw, m.inReplyTo, m.references), false));
    }),
  );
  openapi.add('post', '/api/mail/compose/:id/attachments', {
    operationId: 'mail_compose_attach',
    tags,
    auth: 'signed-in',
    summary:
      'Upload an attachment to a draft (the body is the file, its Content-Type the part type; ?filename= names it, ?version= guards). The draft is replaced by one that carries the attachment',
    parameters: [
      { name: 'filename', in: 'query', required: true, schema: { type: 'string' } },
      { name: 'version', in: 'query', schema: { type: 'integer' } },
    ],
    requestBody: { contentType: 'application/octet-stream', schema: { type: 'string', format: 'binary' } },
    responses: { 201: { description: 'the new draft message (new uid) with the attachment listed' } },
  });

  router.post(
    '/api/mail/compose/encrypted',
    rawBody,
    wrap(async (ctx, req, res) => {
      const mailboxUid = parseOrThrow(z.string().min(1), req.query.mailboxUid, 'mailboxUid (query) is required');
      const raw = opaque(req);
      const box = await mailboxFor(ctx, decls(), mailboxUid);
      res.status(201).json(await fileDraft(ctx, box.uid, raw, await parseEncryptedDraft(raw)));
    }),
  );
  openapi.add('post', '/api/mail/compose/encrypted', {
    operationId: 'mail_compose_encrypted',
    tags,
    auth: 'signed-in',
    summary:
      'Store a client-made S/MIME draft (?mailboxUid=): the body is the whole message, top-level application/pkcs7-mime; only its header is read, the ciphertext is stored as it came',
    parameters: [{ name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } }],
    requestBody: { contentType: 'application/pkcs7-mime', schema: { type: 'string', format: 'binary' } },
    responses: { 201: { description: 'the draft message (smime: encrypted)' } },
  });

  router.put(
    '/api/mail/compose/:id/encrypted',
    rawBody,
    wrap(async (ctx, req, res) => {
      const version = req.query.version === undefined ? undefined : Number(req.query.version);
      const raw = opaque(req);
      const old = await existingDraft(ctx, String(req.params.id), version);
      await mailboxFor(ctx, decls(), old.mailboxUid);
      res.json(await replace(ctx, old, raw, true));
    }),
  );
  openapi.add('put', '/api/mail/compose/:id/encrypted', {
    operationId: 'mail_compose_encrypted_update',
    tags,
    auth: 'signed-in',
    summary: 'Replace a draft with a client-made S/MIME message (opaque ciphertext); the old draft is deleted like DELETE',
    parameters: [{ name: 'version', in: 'query', schema: { type: 'integer' } }],
    requestBody: { contentType: 'application/pkcs7-mime', schema: { type: 'string', format: 'binary' } },
    responses: { 200: { description: 'the new draft message' } },
  });
  return router;
}

function opaque(req: Request): Buffer {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim()
    .toLowerCase();
  if (!['application/pkcs7-mime', 'application/x-pkcs7-mime', 'message/rfc822'].includes(type)) {
    throw new ApiError(
      'api-117',
      'an encrypted draft is sent as application/pkcs7-mime (or message/rfc822): the whole client-made message',
    );
  }
  if (!Buffer.isBuffer(req.body) || !req.body.length)
    throw invalid('the message is the request body', [{ path: 'body', message: 'empty' }]);
  return req.body;
}

/** Adds In-Reply-To/References to a composed source when the draft had them. */
function withThreading(raw: Buffer, inReplyTo: string | null, references: string[]): Buffer {
  const lines: string[] = [];
  if (inReplyTo) lines.push(`In-Reply-To: ${inReplyTo}`);
  if (references.length) lines.push(`References: ${references.join(' ')}`);
  return lines.length ? Buffer.concat([Buffer.from(lines.map((l) => `${l}\r\n`).join('')), raw]) : raw;
}
