import express, { type Router } from 'express';
import { z } from 'zod';
import { ApiError, notFound } from '../errors/index.js';
import { contextFor, defineRoute, type OpenApiRegistry } from '../http/index.js';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, schemasOf, type ResourceService } from '../resources/index.js';
import { type Deps } from '../context/index.js';
import { queryableColumns } from '../storage/index.js';
import { approveSession, declineSession, endSession, sessionReader, sessionsOf, VIEWABLE } from './impersonation-actions.js';
import { impersonationSessionsResource } from './resources.js';

const SESSIONS = '/api/admin/impersonation-sessions';
const OWNER = '/api/mail/mailboxes/:id/impersonation-sessions';
const VIEW = `${SESSIONS}/:id/view`;

/** What the routes of one router need: where to declare, and the resource service. */
interface Routes {
  router: Router;
  deps: Deps;
  openapi: OpenApiRegistry;
  service: ResourceService;
}

/** A session as it goes on the wire (the routes answer the stored row; JSON turns its dates into ISO text). */
const session = () => schemasOf(impersonationSessionsResource).record as z.ZodType<Record<string, unknown>, object>;
const notNow = { 409: 'api-120: the session is not in a state that allows it' };

/** The owner's side: every request for the mailbox, and consent given or refused (audited). */
function ownerRoutes({ router, deps, openapi }: Routes): void {
  const tags = ['mail/mailboxes'];
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: OWNER,
    operationId: 'mail_mailboxes_impersonation_sessions',
    summary: 'The owner sees every impersonation request for the mailbox: who asked, why, its state, and how many reads were made',
    tags,
    auth: 'signed-in',
    response: z.array(session()).describe('sessions, newest first'),
    handler: (ctx, { params }) => sessionsOf(ctx, params.id),
  });
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${OWNER}/:sid/approve`,
    operationId: 'mail_mailboxes_impersonation_approve',
    summary: 'The owner consents: the session becomes active, read-only, for mail:impersonation:session_minutes (audited)',
    tags,
    auth: 'signed-in',
    response: session().describe('the active session'),
    errors: notNow,
    handler: (ctx, { params }) => approveSession(ctx, params.id, params.sid),
  });
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${OWNER}/:sid/decline`,
    operationId: 'mail_mailboxes_impersonation_decline',
    summary: 'The owner refuses a pending session, or ends an active one at once (audited)',
    tags,
    auth: 'signed-in',
    response: session().describe('the declined or ended session'),
    errors: notNow,
    handler: (ctx, { params }) => declineSession(ctx, params.id, params.sid),
  });
}

const adminTags = ['admin/impersonation-sessions'];

/** The administrator's side: ending a session. */
function adminRoutes({ router, deps, openapi }: Routes): void {
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${SESSIONS}/:id/end`,
    operationId: 'admin_impersonation_sessions_end',
    summary: 'End a pending or active session (trusted role, fresh elevation, audited)',
    tags: adminTags,
    auth: 'trusted-fresh',
    response: session().describe('the ended session'),
    errors: notNow,
    handler: (ctx, { params }) => endSession(ctx, params.id),
  });
}

/**
 * The generic list query of the viewable resources: limit, page, sort and a filter for every field
 * one of them can be filtered on. The resource the path names checks its own fields (parseListQuery).
 */
function viewListQuery(service: ResourceService) {
  const fields = new Set<string>();
  for (const decl of service.registry.all().filter((d) => VIEWABLE.includes(d.name))) {
    const hidden = new Set(decl.hiddenFields ?? []);
    for (const [name, col] of Object.entries(queryableColumns(decl.model))) if (col.kind !== 'json' && !hidden.has(name)) fields.add(name);
  }
  const param = (description: string) =>
    z
      .union([z.string(), z.array(z.string())])
      .optional()
      .describe(description);
  return z.object({
    limit: param(`page size, default ${LIST_LIMIT_DEFAULT}; above ${LIST_LIMIT_MAX} is refused with api-106`),
    page: param('zero-based page'),
    sort: param('field, -field, a,-b, or JSON {"field":1,"other":-1}'),
    ...Object.fromEntries(
      [...fields].sort().map((name) => [name, param(`filter by ${name}, where the resource has it (repeat for any of several values)`)]),
    ),
  });
}

/** The administrator who asked reads — only reads — through an active session. */
function viewRoutes({ router, deps, openapi, service }: Routes): void {
  const read = sessionReader(service);

  const view = (summary: string, op: string) => ({
    operationId: `admin_impersonation_sessions_view_${op}`,
    summary,
    description: `Resources: ${VIEWABLE.join(', ')}. Only the administrator who asked, with fresh elevation, while the session is active; otherwise 404. Every read is audited (impersonation-sessions.read) and counted on the session. Other methods answer 403 api-102.`,
    tags: adminTags,
    auth: 'trusted-fresh' as const,
  });
  /** A record of the resource the path names, in its read view. */
  const record = z.record(z.string(), z.unknown());
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${VIEW}/messages/:uid/body`,
    ...view('The text and sanitized HTML of a message of the impersonated mailbox ({encrypted: true} for S/MIME ciphertext)', 'body'),
    response: z.object({ encrypted: z.boolean(), text: z.string().nullable(), html: z.string().nullable() }),
    handler: (ctx, { params }) => read.body(ctx, params.id, params.uid),
  });
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${VIEW}/:resource`,
    ...view('List records of the impersonated mailbox (the generic list query: filters, sort, limit, page)', 'list'),
    query: viewListQuery(service),
    response: z.array(record).describe('read-only data of the impersonated mailbox'),
    handler: (ctx, { params, query }) => read.list(ctx, params.id, params.resource, query),
  });
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${VIEW}/:resource/:uid`,
    ...view('Read one record of the impersonated mailbox', 'get'),
    response: record.describe('read-only data of the impersonated mailbox'),
    handler: (ctx, { params }) => read.get(ctx, params.id, params.resource, params.uid),
  });

  // Read-only: every other method under /view is refused, after the same elevation check. Not an
  // operation of its own (no OpenAPI entry): a guard behind the read routes.
  router.all(`${VIEW}/*rest`, (req, _res, next) => {
    try {
      contextFor(req, deps, 'trusted-fresh');
      next(req.method === 'GET' || req.method === 'HEAD' ? notFound() : new ApiError('api-102', 'impersonation sessions are read-only'));
    } catch (e) {
      next(e);
    }
  });
}

/**
 * Audited impersonation (Spec: Roles and elevation — "administrators view an account by audited
 * impersonation"; "administrators cannot read other users' mail"). Design:
 *  1. an elevated administrator asks (POST /api/admin/impersonation-sessions {mailboxUid, reason});
 *  2. the mailbox owner approves or declines it on their own routes — without consent nothing opens;
 *  3. while active (mail:impersonation:session_minutes) the administrator who asked, still elevated,
 *     reads — and only reads — through /view/…; each read is audited and counted on the session;
 *  4. the owner or an administrator ends it at any time; expiry ends it too.
 * The normal mail routes never change: they still strip trusted roles and answer 404.
 */
export function impersonationRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const routes: Routes = { router: express.Router(), deps, openapi, service };
  ownerRoutes(routes);
  adminRoutes(routes);
  viewRoutes(routes);
  return routes.router;
}
