import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { IngestDeps } from './accept.js';
import { quarantineHeaders, releaseQuarantined, retryEntry } from './admin-actions.js';
import { INGEST_STATES } from './models.js';
import { readHeaders } from './headers.js';
import { explainTransportRules } from './transport-rules.js';

const testBody = z.strictObject({
  message: z
    .string()
    .min(1)
    .max(256 * 1024)
    .describe('the message, or its header block (a body after the first empty line is not read)'),
  envelopeFrom: z.string().max(320).default('').describe('MAIL FROM (empty: a bounce)'),
  recipients: z.array(z.string().trim().toLowerCase().max(320)).min(1).max(100).describe('RCPT TO'),
});

const decision = z.object({
  reject: z.object({ rule: z.string(), notice: z.string().nullable() }).nullable(),
  addHeaders: z.array(z.tuple([z.string(), z.string()])),
  addRecipients: z.array(z.string()),
  quarantine: z.string().nullable().describe('the rule that holds the message'),
});

/** Administrative actions beyond the generic routes: retry, headers, release (trusted role, fresh elevation, audited). */
export function ingestAdminRouter(deps: IngestDeps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const auth = 'trusted-fresh' as const;

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/ingest-queue/:id/retry',
    operationId: 'mail_ingest_queue_retry',
    summary: 'Queue an entry again',
    description: 'A failed (or any finished) entry goes back to queued with its attempts reset; the worker is woken.',
    tags: ['mail/ingest-queue'],
    auth,
    response: z.object({ uid: z.string(), version: z.number().int(), state: z.enum(INGEST_STATES) }),
    errors: { 404: 'api-107: no such entry', 409: 'api-120: the entry is already queued' },
    handler: (ctx, { params }) => retryEntry(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/quarantine/:id/headers',
    operationId: 'mail_quarantine_headers',
    summary: 'Header block of a held message',
    description: 'The headers only; never the body. Audited.',
    tags: ['mail/quarantine'],
    auth,
    response: z.object({ uid: z.string(), headers: z.string() }),
    errors: { 404: 'api-107: no such held message' },
    handler: (ctx, { params }) => quarantineHeaders(ctx, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/quarantine/:id/release',
    operationId: 'mail_quarantine_release',
    summary: 'Release a held message to the Inbox',
    description:
      'Files the message in the recipient mailbox Inbox (counts, quota and events as on delivery) and removes it from the quarantine. Audited.',
    tags: ['mail/quarantine'],
    auth,
    response: z.object({ uid: z.string(), messageUid: z.string(), folderRole: z.literal('inbox') }),
    errors: { 404: 'api-107: no such held message' },
    handler: (ctx, { params }) => releaseQuarantined(ctx, deps.port, params.id),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/transport-rules/test',
    operationId: 'mail_transport_rules_test',
    summary:
      'What the enabled transport rules would do to a message: the decision and each rule in order, matched or not (nothing is delivered)',
    description:
      'Rules run by priority, lowest first, as on delivery; the first reject ends the run (the rules after it are `skipped`). Only the header block of `message` is read.',
    tags: ['mail/transport-rules'],
    auth,
    body: testBody,
    response: z.object({
      decision,
      rules: z.array(
        z.object({
          uid: z.string(),
          name: z.string(),
          priority: z.number().int(),
          action: z.string(),
          matched: z.boolean(),
          skipped: z.boolean(),
        }),
      ),
    }),
    handler: (ctx, { body }) =>
      explainTransportRules(ctx, {
        headers: readHeaders(Buffer.from(body.message, 'latin1')),
        envelopeFrom: body.envelopeFrom,
        recipients: body.recipients,
      }),
  });
  return router;
}
