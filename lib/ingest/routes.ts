import express, { type Request, type Router } from 'express';
import { z } from 'zod';
import { ApiError, notFound } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/openapi.js';
import { blobsOf } from '../mail/index.js';
import { parseOrThrow } from '../resources/index.js';
import type { BlobStore, StagedBlob } from '../storage/index.js';
import { acceptHandoff, type IngestDeps } from './accept.js';
import { checkIngestSecret, ingestGuard } from './guard.js';
import { resolveRecipient, servedDomains } from './resolve.js';
import { wakeWorkers } from './wake.js';

const addressList = (value: string | undefined, what: string, max: number): string[] => {
  const list = (value ?? '').split(',').map((s) => s.trim()).filter(Boolean).map((s) => {
    try {
      return decodeURIComponent(s).trim().toLowerCase();
    } catch {
      throw new ApiError('api-106', `${what}: ${s} is not percent-encoded correctly`);
    }
  });
  if (list.length > max) throw new ApiError('api-106', `${what}: more than ${max} recipients`);
  return list;
};

const addressShape = z.string().max(320).regex(/^[^\s@<>,]+@[^\s@<>,]+$/, 'must be a plain address');

/** The envelope of a hand-off from its headers (Spec: Internal mail hand-off); api-106 when malformed. */
export function envelopeOf(header: (name: string) => string | undefined, maxRecipients: number): { from: string; recipients: string[]; transactionId?: string } {
  const from = addressList(header('x-envelope-from'), 'X-Envelope-From', 1)[0] ?? '';
  const recipients = addressList(header('x-envelope-to'), 'X-Envelope-To', maxRecipients);
  if (!recipients.length) throw new ApiError('api-106', 'X-Envelope-To is required (comma-separated, percent-encoded recipients)', { details: [{ path: 'X-Envelope-To', message: 'required' }] });
  for (const r of recipients) parseOrThrow(addressShape, r, 'X-Envelope-To');
  if (from) parseOrThrow(addressShape, from, 'X-Envelope-From');
  const txHeader = header('x-transaction-id');
  return { from, recipients, transactionId: txHeader && /^[\w.:@-]{1,200}$/.test(txHeader) ? txHeader : undefined };
}

const tooLarge = (limit: number, size?: number) => new ApiError('api-110', `Message too large: ${size !== undefined ? `${size} bytes` : `over ${limit} bytes`}; the limit is ${limit} bytes (mail:ingest:max_message_bytes)`);

/**
 * Streams the raw body to a staged blob as it arrives (hashed on the way, never whole in memory),
 * refusing at once beyond the limit (413 api-110; the temporary file is removed).
 */
async function receiveBody(req: Request, blobs: BlobStore, limit: number): Promise<StagedBlob> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit, declared);
  const w = await blobs.writer({ maxBytes: limit, tooLarge: () => tooLarge(limit) });
  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      let tail = Promise.resolve();
      const fail = (e: unknown) => {
        if (failed) return;
        failed = true;
        // Drain what is still coming so the client reads the answer instead of a reset.
        req.removeListener('data', onData);
        req.resume();
        reject(e);
      };
      const onData = (c: Buffer) => {
        req.pause();
        tail = tail.then(() => w.write(c)).then(() => void (failed || req.resume()), fail);
      };
      req.on('data', onData);
      req.on('end', () => void tail.then(() => void (failed || resolve()), fail));
      req.on('error', fail);
      req.on('close', () => {
        if (!req.complete) fail(new ApiError('api-111', 'Request aborted'));
      });
    });
    return await w.finish();
  } catch (e) {
    await w.abort();
    throw e;
  }
}

const tag = ['internal/mta'];

/**
 * Spec: Internal mail hand-off (no JWT). Mounted before the JSON body parser and the JWT
 * middleware: the body is a raw message, the guard is the ingest secret.
 */
export function ingestRouter(deps: IngestDeps, openapi: OpenApiRegistry, opts: { onQueued?: () => void } = {}): Router {
  checkIngestSecret(deps.config);
  const router = express.Router();
  const guard = ingestGuard(deps.config);
  const onQueued = opts.onQueued ?? (() => wakeWorkers(deps.config, 'scan'));
  router.use('/internal/mta', guard);

  router.get('/internal/mta/domain', async (req, res, next) => {
    try {
      const name = parseOrThrow(z.string().trim().toLowerCase().min(1).max(253), req.query.name, 'name');
      const domains = await servedDomains(deps);
      if (!domains.has(name)) throw new ApiError('api-119', `Forbidden: the domain ${name} is not served here`, { details: [{ path: 'name', message: 'domain-not-served' }] });
      res.json({ name, accepted: true, canonical: domains.get(name) });
    } catch (e) {
      next(e);
    }
  });

  router.get('/internal/mta/resolve', async (req, res, next) => {
    try {
      const rcpt = parseOrThrow(addressShape, typeof req.query.rcpt === 'string' ? req.query.rcpt.trim().toLowerCase() : req.query.rcpt, 'rcpt');
      const r = await resolveRecipient(deps, rcpt);
      if (r.kind === 'unknown' && r.reason === 'domain') throw new ApiError('api-119', `Forbidden: the domain of ${rcpt} is not served here`, { details: [{ path: 'rcpt', message: 'domain-not-served' }] });
      if (r.kind === 'unknown') throw notFound(`No such recipient ${rcpt}`);
      res.json({ rcpt, exists: true, kind: r.kind });
    } catch (e) {
      next(e);
    }
  });

  router.post('/internal/mta/deliver', async (req, res, next) => {
    try {
      const { from, recipients, transactionId } = envelopeOf((name) => req.header(name), deps.config.get('mail:ingest:max_recipients'));
      const body = await receiveBody(req, blobsOf(deps), deps.config.get('mail:ingest:max_message_bytes'));
      let out;
      try {
        if (!body.size) throw new ApiError('api-106', 'The body must be the raw message');
        // Queued entries commit the staged body as the stored raw; otherwise its temporary file goes.
        out = await acceptHandoff(deps, { raw: body, envelopeFrom: from, recipients, transactionId });
      } finally {
        await body.discard();
      }
      if (out.queued) onQueued();
      res.status(202).json(out);
    } catch (e) {
      next(e);
    }
  });

  const auth = 'ingest-secret' as const;
  const err403 = { description: 'guard refused (wrong secret, proxy header) or the domain is not served: api-119' };
  openapi.add('get', '/internal/mta/domain', {
    operationId: 'mta_domain', summary: 'Does the service accept mail for this domain', tags: tag, auth,
    description: 'An enabled, verified domain (or one of its aliases) answers 200; any other answers 403 api-119 (never 404).',
    parameters: [{ name: 'name', in: 'query', required: true, schema: { type: 'string' } }],
    responses: { 200: { description: 'served', schema: { type: 'object', properties: { name: { type: 'string' }, accepted: { type: 'boolean' }, canonical: { type: 'string' } } } }, 403: err403, 429: { description: 'too many wrong secrets' } },
  });
  openapi.add('get', '/internal/mta/resolve', {
    operationId: 'mta_resolve', summary: 'Does this recipient exist', tags: tag, auth,
    description: 'Resolution order: primary address, alias (also through domain aliases), distribution list, plus-addressing. 404 means permanent rejection of the recipient.',
    parameters: [{ name: 'rcpt', in: 'query', required: true, schema: { type: 'string' } }],
    responses: { 200: { description: 'exists', schema: { type: 'object', properties: { rcpt: { type: 'string' }, exists: { type: 'boolean' }, kind: { type: 'string', enum: ['mailbox', 'list'] } } } }, 403: err403, 404: { description: 'no such recipient (permanent)' } },
  });
  openapi.add('post', '/internal/mta/deliver', {
    operationId: 'mta_deliver', summary: 'Hand an inbound message to the service', tags: tag, auth,
    description: 'The body is the raw message (streamed; limit mail:ingest:max_message_bytes, else 413 api-110). X-Envelope-From is the envelope sender; X-Envelope-To the recipients, comma-separated and percent-encoded. X-Transaction-Id (optional, e.g. the Postfix queue id) identifies the SMTP transaction; without it the transaction is the message bytes plus the envelope. A retried hand-off of the same transaction creates no duplicate. Every entry is durable before the 202.',
    parameters: [
      { name: 'X-Envelope-From', in: 'header', schema: { type: 'string' } },
      { name: 'X-Envelope-To', in: 'header', required: true, schema: { type: 'string' } },
      { name: 'X-Transaction-Id', in: 'header', schema: { type: 'string' } },
    ],
    requestBody: { contentType: 'message/rfc822', schema: { type: 'string', format: 'binary' } },
    responses: {
      202: { description: 'accepted; a result per recipient (queued, duplicate, relayed, unknown, rejected)', schema: { type: 'object', properties: { transactionId: { type: 'string' }, queued: { type: 'integer' }, results: { type: 'array', items: { type: 'object', properties: { recipient: { type: 'string' }, status: { type: 'string' }, mailboxes: { type: 'integer' }, reason: { type: 'string' } } } } } } },
      403: err403, 413: { description: 'message over mail:ingest:max_message_bytes' }, 429: { description: 'too many wrong secrets' },
    },
  });
  return router;
}
