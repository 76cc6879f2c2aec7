import express, { type Request, type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import { messagesResource } from './messages-resource.js';
import type { Deps } from '../context/index.js';
import { composeActions, type UploadedBody } from './compose-actions.js';
import { draftBody } from './compose.js';

const MAX_ATTACHMENT = 25 * 1024 * 1024 + 64 * 1024;
// No path separators, control characters (Cc) or bidi embeddings, overrides and isolates: a name that
// would hide or reorder what it shows (lib/mail/attachment-names.ts makes any other name safe to show).
const filenameParam = z
  .string()
  .trim()
  .min(1)
  .max(255)
  .regex(/^[^/\\\p{Cc}\u202A-\u202E\u2066-\u2069]+$/u, 'a plain file name: no /, \\, control or bidi characters');
/** ?version= guards a replacement: the draft must still be at this version (409 api-108 otherwise). */
const versionParam = z.coerce.number().int().optional().describe('the version of the draft being replaced');

/** The body a non-JSON route read (express.raw), with its Content-Type; a body another parser took counts as empty. */
function uploaded(req: Request): UploadedBody {
  const contentType = String(req.headers['content-type'] ?? '')
    .split(';')[0]
    .trim();
  return { contentType, content: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0) };
}

/** Drafts: built by the server from JSON, or client-made S/MIME messages stored as they came; attachments uploaded one by one. */
export function composeRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const act = composeActions(service);
  const message = schemasOf(messagesResource).record;
  const tags = ['mail/compose'];
  const rawBody = express.raw({ type: () => true, limit: MAX_ATTACHMENT });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/compose',
    operationId: 'mail_compose_create',
    tags,
    auth: 'signed-in',
    summary:
      'Create a draft in Drafts: the server builds the MIME message (HTML sanitized; replyTo/forwardOf quote a message of the mailbox and set In-Reply-To/References; signature: a signature uid or true for the default)',
    body: draftBody,
    status: 201,
    response: message.describe('the draft message (draft flag, Drafts folder)'),
    handler: (ctx, { body }) => act.create(ctx, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/mail/compose/:id',
    operationId: 'mail_compose_update',
    tags,
    auth: 'signed-in',
    summary:
      'Replace a draft: a new message with the new source is filed in Drafts (uploaded attachments kept) and the old one is deleted like DELETE',
    body: draftBody,
    response: message.describe('the new draft message (new uid)'),
    handler: (ctx, { params, body }) => act.update(ctx, params.id, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/compose/:id/attachments',
    operationId: 'mail_compose_attach',
    tags,
    auth: 'signed-in',
    summary:
      'Upload an attachment to a draft (the body is the file, its Content-Type the part type; ?filename= names it, ?version= guards). The draft is replaced by one that carries the attachment',
    before: [rawBody],
    query: z.object({ filename: filenameParam, version: versionParam }),
    rawBody: { contentType: 'application/octet-stream', description: 'the file' },
    status: 201,
    response: message.describe('the new draft message (new uid) with the attachment listed'),
    handler: (ctx, { params, query }, req) => act.attach(ctx, params.id, query.filename, uploaded(req), query.version),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/compose/encrypted',
    operationId: 'mail_compose_encrypted',
    tags,
    auth: 'signed-in',
    summary:
      'Store a client-made S/MIME draft (?mailboxUid=): the body is the whole message, top-level application/pkcs7-mime; only its header is read, the ciphertext is stored as it came',
    before: [rawBody],
    query: z.object({ mailboxUid: z.string().min(1) }),
    rawBody: { contentType: 'application/pkcs7-mime', description: 'the whole client-made message' },
    status: 201,
    response: message.describe('the draft message (smime: encrypted)'),
    errors: { 415: 'api-117: the body is not application/pkcs7-mime (or message/rfc822)' },
    handler: (ctx, { query }, req) => act.createEncrypted(ctx, query.mailboxUid, uploaded(req)),
  });

  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/mail/compose/:id/encrypted',
    operationId: 'mail_compose_encrypted_update',
    tags,
    auth: 'signed-in',
    summary: 'Replace a draft with a client-made S/MIME message (opaque ciphertext); the old draft is deleted like DELETE',
    before: [rawBody],
    query: z.object({ version: versionParam }),
    rawBody: { contentType: 'application/pkcs7-mime', description: 'the whole client-made message' },
    response: message.describe('the new draft message'),
    errors: { 415: 'api-117: the body is not application/pkcs7-mime (or message/rfc822)' },
    handler: (ctx, { params, query }, req) => act.updateEncrypted(ctx, params.id, uploaded(req), query.version),
  });
  return router;
}
