import express, { type Router } from 'express';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { branding, mailboxPolicy, retentionPolicy, singletonRouter } from '../settings/index.js';
import { diagnostics } from './diagnostics.js';
import { changeSetup, readSetup, setupChange } from './setup-state.js';
import { diagnosticsView, setupView } from './wire.js';

/** The /api/system policies and branding, first-run state, and /api/admin/diagnostics. */
export function adminRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  router.use(singletonRouter([mailboxPolicy, retentionPolicy, branding], deps, openapi));

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/system/setup',
    operationId: 'setup_read',
    summary: "First-run state: configuration, CA, domains and DKIM keys, and the first-run guide's steps",
    tags: ['system'],
    auth: 'trusted',
    response: setupView,
    handler: (ctx) => readSetup(ctx),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/system/setup',
    operationId: 'setup_change',
    summary: 'Mark first-run steps done or open again (audited as setup.update)',
    description:
      'domains and dns need a served domain, mailboxes a mailbox (409 api-120 otherwise). version is the one read (stale: 409 api-108).',
    tags: ['system'],
    auth: 'trusted-fresh',
    body: setupChange,
    response: setupView,
    errors: { 409: "api-108: stale version; api-120: the step's outcome does not hold yet" },
    handler: (ctx, { body }) => changeSetup(ctx, body),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/admin/diagnostics',
    operationId: 'admin_diagnostics',
    summary: 'Versions, daemon heartbeats, queue depths, scanner and transport reachability',
    description:
      'A daemon process is alive while its heartbeat is younger than three of its periods (mail:heartbeat:interval_seconds). Scanner probes scan a tiny message through the real clients with mail:diagnostics:probe_timeout_ms. status is degraded when problems names anything.',
    tags: ['admin'],
    auth: 'trusted',
    response: diagnosticsView,
    handler: (ctx) => diagnostics(ctx),
  });
  return router;
}
