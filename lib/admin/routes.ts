import express, { type Router } from 'express';
import { requireTrusted } from '../auth/index.js';
import { ctxOf } from '../http/index.js';
import { jsonSchema, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { branding } from '../settings/index.js';
import { diagnostics } from './diagnostics.js';
import { mailboxPolicy, retentionPolicy } from '../settings/index.js';
import { changeSetup, readSetup, setupChange } from './setup-state.js';
import { singletonRouter } from '../settings/index.js';

/** The /api/system policies and branding, first-run state, and /api/admin/diagnostics. */
export function adminRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  router.use(singletonRouter([mailboxPolicy, retentionPolicy, branding], deps, openapi));

  router.get('/api/system/setup', async (req, res, next) => {
    try {
      const ctx = ctxOf(req, deps);
      requireTrusted(ctx.principal, ctx.config, { fresh: false });
      res.json(await readSetup(ctx));
    } catch (e) {
      next(e);
    }
  });
  router.post('/api/system/setup', async (req, res, next) => {
    try {
      res.json(await changeSetup(ctxOf(req, deps), req.body));
    } catch (e) {
      next(e);
    }
  });
  const setupDoc = {
    type: 'object',
    description:
      "setupRan: svcmail setup filled the configuration (server id, changed ingest secret, sign-in service); ca, domains and dkim are checked now; steps are the first-run guide's, complete when all are done.",
    properties: {
      setupRan: { type: 'boolean' },
      complete: { type: 'boolean' },
      completedAt: { type: ['string', 'null'] },
      version: { type: 'integer' },
      mailboxes: { type: 'integer' },
      configuration: { type: 'object' },
      ca: {
        type: 'object',
        properties: { backend: { enum: ['local', 'vault'] }, present: { type: 'boolean' }, detail: { type: 'string' } },
      },
      domains: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            name: { type: 'string' },
            enabled: { type: 'boolean' },
            verified: { type: 'boolean' },
            dkimSelector: { type: 'string' },
            dkimPublicKey: { type: 'boolean' },
            dkimKeyFile: { type: 'boolean' },
          },
        },
      },
      dkim: {
        type: 'object',
        properties: { ready: { type: 'array', items: { type: 'string' } }, missing: { type: 'array', items: { type: 'string' } } },
      },
      steps: { type: 'array', items: { type: 'object', properties: { step: { type: 'string' }, done: { type: 'boolean' } } } },
    },
  };
  openapi.add('get', '/api/system/setup', {
    operationId: 'setup_read',
    summary: "First-run state: configuration, CA, domains and DKIM keys, and the first-run guide's steps",
    tags: ['system'],
    auth: 'trusted',
    responses: { 200: { description: 'the state', schema: setupDoc } },
  });
  openapi.add('post', '/api/system/setup', {
    operationId: 'setup_change',
    summary: 'Mark first-run steps done or open again (audited as setup.update)',
    description:
      'domains and dns need a served domain, mailboxes a mailbox (409 api-120 otherwise). version is the one read (stale: 409 api-108).',
    tags: ['system'],
    auth: 'trusted-fresh',
    requestBody: { schema: jsonSchema(setupChange, 'input') },
    responses: {
      200: { description: 'the state after the change', schema: setupDoc },
      409: { description: "api-108: stale version; api-120: the step's outcome does not hold yet" },
    },
  });

  router.get('/api/admin/diagnostics', async (req, res, next) => {
    try {
      const ctx = ctxOf(req, deps);
      requireTrusted(ctx.principal, ctx.config, { fresh: false });
      res.json(await diagnostics(ctx));
    } catch (e) {
      next(e);
    }
  });
  const probe = { type: 'object', properties: { reachable: { type: 'boolean' }, detail: { type: 'string' }, ms: { type: 'integer' } } };
  openapi.add('get', '/api/admin/diagnostics', {
    operationId: 'admin_diagnostics',
    summary: 'Versions, daemon heartbeats, queue depths, scanner and transport reachability',
    description:
      'A daemon process is alive while its heartbeat is younger than three of its periods (mail:heartbeat:interval_seconds). Scanner probes scan a tiny message through the real clients with mail:diagnostics:probe_timeout_ms. status is degraded when problems names anything.',
    tags: ['admin'],
    auth: 'trusted',
    responses: {
      200: {
        description: 'the diagnostics',
        schema: {
          type: 'object',
          properties: {
            generatedAt: { type: 'string' },
            status: { enum: ['ok', 'degraded'] },
            problems: { type: 'array', items: { type: 'string' } },
            versions: {
              type: 'object',
              properties: {
                product: { type: 'string' },
                node: { type: 'string' },
                datastore: { type: 'object', properties: { kind: { type: 'string' }, version: { type: 'string' } } },
              },
            },
            daemons: {
              type: 'array',
              items: {
                type: 'object',
                properties: {
                  daemon: { type: 'string' },
                  alive: { type: 'integer' },
                  processes: { type: 'array', items: { type: 'object' } },
                },
              },
            },
            queues: {
              type: 'object',
              properties: {
                ingest: { type: 'object', additionalProperties: { type: 'integer' } },
                outbound: { type: 'object', additionalProperties: { type: 'integer' } },
                handoffs: { type: 'object', additionalProperties: { type: 'integer' } },
              },
            },
            scanners: { type: 'object', properties: { rspamd: probe, clamd: probe } },
            transport: { ...probe, properties: { ...probe.properties, provider: { type: 'string' } } },
          },
        },
      },
    },
  });
  return router;
}
