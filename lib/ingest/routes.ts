import express, { type Request, type Router } from 'express';
import { z } from 'zod';
import { ApiError, invalid, notFound } from '../errors/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { blobsOf } from '../mail/index.js';
import type { BlobStore, StagedBlob } from '../storage/index.js';
import { acceptHandoff, type IngestDeps } from './accept.js';
import { checkIngestSecret, ingestGuard } from './guard.js';
import { resolveRecipient, servedDomains } from './resolve.js';
import { wakeWorkers } from './wake.js';

/** C0 controls, DEL and C1 controls (Unicode Cc): no address, domain or envelope value has one. */
const CONTROL = /\p{Cc}/u;

/** api-106 naming the header or parameter (path) when a decoded value holds a control character. */
function refuseControls(value: string, path: string, shown: string): void {
  const c = CONTROL.exec(value)?.[0];
  if (c === undefined) return;
  const code = `U+${c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0')}`;
  throw invalid(
    `${path}: ${shown} holds the control character ${code} (after percent-decoding); addresses and domain names never contain control characters`,
    [{ path, message: `control character ${code}` }],
  );
}

const addressShape = z
  .string()
  .max(320)
  .regex(/^[^\s@<>,]+@[^\s@<>,]+$/);

/** A plain address (local@domain, at most 320 characters), else api-106 naming the header or parameter. */
function checkAddress(value: string, path: string): string {
  if (!addressShape.safeParse(value).success)
    throw invalid(`${path}: ${value} must be a plain address (local@domain, no spaces, at most 320 characters)`, [
      { path, message: 'must be a plain address' },
    ]);
  return value;
}

/**
 * A comma-separated list of percent-encoded addresses: each decoded, refused when it holds a control
 * character (checked before trimming: a decoded %0D%0A must not be trimmed away), lower-cased.
 */
const addressList = (value: string | undefined, what: string, max: number): string[] => {
  const list = (value ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((s) => {
      let decoded: string;
      try {
        decoded = decodeURIComponent(s);
      } catch {
        throw invalid(`${what}: ${s} is not percent-encoded correctly`, [{ path: what, message: 'bad percent-encoding' }]);
      }
      refuseControls(decoded, what, s);
      return decoded.trim().toLowerCase();
    });
  if (list.length > max) throw invalid(`${what}: more than ${max} recipients`, [{ path: what, message: `more than ${max} addresses` }]);
  return list;
};

/** The envelope of a hand-off from its headers (Spec: Internal mail hand-off); api-106 when malformed. */
export function envelopeOf(
  header: (name: string) => string | undefined,
  maxRecipients: number,
): { from: string; recipients: string[]; transactionId?: string } {
  const from = addressList(header('x-envelope-from'), 'X-Envelope-From', 1)[0] ?? '';
  const recipients = addressList(header('x-envelope-to'), 'X-Envelope-To', maxRecipients);
  if (!recipients.length)
    throw new ApiError('api-106', 'X-Envelope-To is required (comma-separated, percent-encoded recipients)', {
      details: [{ path: 'X-Envelope-To', message: 'required' }],
    });
  for (const r of recipients) checkAddress(r, 'X-Envelope-To');
  if (from) checkAddress(from, 'X-Envelope-From');
  // Not percent-decoded, and Node's HTTP parser refuses control characters in header values: a value
  // outside this pattern is ignored (the transaction is then the message bytes plus the envelope).
  const txHeader = header('x-transaction-id');
  return { from, recipients, transactionId: txHeader && /^[\w.:@-]{1,200}$/.test(txHeader) ? txHeader : undefined };
}

/** A query parameter of the lookup routes (decoded by the query parser), control characters refused. */
function queryValue(value: unknown, path: string): string {
  if (typeof value !== 'string' || !value.trim()) throw invalid(`${path} (query) is required, once`, [{ path, message: 'required' }]);
  refuseControls(value, path, encodeURIComponent(value));
  return value.trim().toLowerCase();
}

const tooLarge = (limit: number, size?: number) =>
  new ApiError(
    'api-110',
    `Message too large: ${size !== undefined ? `${size} bytes` : `over ${limit} bytes`}; the limit is ${limit} bytes (mail:ingest:max_message_bytes)`,
  );

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
      const name = queryValue(req.query.name, 'name');
      if (name.length > 253) throw invalid(`name: a domain name has at most 253 characters`, [{ path: 'name', message: 'too long' }]);
      const domains = await servedDomains(deps);
      if (!domains.has(name))
        throw new ApiError('api-119', `Forbidden: the domain ${name} is not served here`, {
          details: [{ path: 'name', message: 'domain-not-served' }],
        });
      res.json({ name, accepted: true, canonical: domains.get(name) });
    } catch (e) {
      next(e);
    }
  });

  router.get('/internal/mta/resolve', async (req, res, next) => {
    try {
      const rcpt = checkAddress(queryValue(req.query.rcpt, 'rcpt'), 'rcpt');
      const r = await resolveRecipient(deps, rcpt);
      if (r.kind === 'unknown' && r.reason === 'domain')
        throw new ApiError('api-119', `Forbidden: the domain of ${rcpt} is not served here`, {
          details: [{ path: 'rcpt', message: 'domain-not-served' }],
        });
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
  const err400 = (what: string) => ({
    description: `api-106: ${what} malformed (not a plain address or domain, bad percent-encoding, or a control character after decoding); details name it`,
  });
  openapi.add('get', '/internal/mta/domain', {
    operationId: 'mta_domain',
    summary: 'Does the service accept mail for this domain',
    tags: tag,
    auth,
    description: 'An enabled, verified domain (or one of its aliases) answers 200; any other answers 403 api-119 (never 404).',
    parameters: [{ name: 'name', in: 'query', required: true, schema: { type: 'string' } }],
    responses: {
      200: {
        description: 'served',
        schema: { type: 'object', properties: { name: { type: 'string' }, accepted: { type: 'boolean' }, canonical: { type: 'string' } } },
      },
      400: err400('name'),
      403: err403,
      429: { description: 'too many wrong secrets' },
    },
  });
  openapi.add('get', '/internal/mta/resolve', {
    operationId: 'mta_resolve',
    summary: 'Does this recipient exist',
    tags: tag,
    auth,
    description:
      'Resolution order: primary address, alias (also through domain aliases), distribution list, plus-addressing. 404 means permanent rejection of the recipient.',
    parameters: [{ name: 'rcpt', in: 'query', required: true, schema: { type: 'string' } }],
    responses: {
      200: {
        description: 'exists',
        schema: {
          type: 'object',
          properties: { rcpt: { type: 'string' }, exists: { type: 'boolean' }, kind: { type: 'string', enum: ['mailbox', 'list'] } },
        },
      },
      400: err400('rcpt'),
      403: err403,
      404: { description: 'no such recipient (permanent)' },
    },
  });
  openapi.add('post', '/internal/mta/deliver', {
    operationId: 'mta_deliver',
    summary: 'Hand an inbound message to the service',
    tags: tag,
    auth,
    description:
      'The body is the raw message (streamed; limit mail:ingest:max_message_bytes, else 413 api-110). X-Envelope-From is the envelope sender; X-Envelope-To the recipients, comma-separated and percent-encoded. X-Transaction-Id (optional, e.g. the Postfix queue id) identifies the SMTP transaction; without it the transaction is the message bytes plus the envelope. A retried hand-off of the same transaction creates no duplicate. Every entry is durable before the 202.',
    parameters: [
      { name: 'X-Envelope-From', in: 'header', schema: { type: 'string' } },
      { name: 'X-Envelope-To', in: 'header', required: true, schema: { type: 'string' } },
      { name: 'X-Transaction-Id', in: 'header', schema: { type: 'string' } },
    ],
    requestBody: { contentType: 'message/rfc822', schema: { type: 'string', format: 'binary' } },
    responses: {
      202: {
        description: 'accepted; a result per recipient (queued, duplicate, relayed, unknown, rejected)',
        schema: {
          type: 'object',
          properties: {
            transactionId: { type: 'string' },
            queued: { type: 'integer' },
            results: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  recipient: { type: 'string' },
                  status: { type: 'string' },
                  mailboxes: { type: 'integer' },
                  reason: { type: 'string' },
                },
              },
            },
          },
        },
      },
      400: err400('X-Envelope-From or X-Envelope-To'),
      403: err403,
      413: { description: 'message over mail:ingest:max_message_bytes' },
      429: { description: 'too many wrong secrets' },
    },
  });
  return router;
}
