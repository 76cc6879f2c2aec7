import express, { type Request, type Response, type Router } from 'express';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { blobsOf, parseMessage, type Message } from '../mail/index.js';
import { parseListQuery, type QueryParams, type ResourceDecl, type ResourceService } from '../resources/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { sanitizeMailHtml } from '../scan/index.js';
import type { Row } from '../storage/index.js';
import { ImpersonationSessionModel, type ImpersonationSession } from './models.js';
import { requireOwner } from './resources.js';

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;
type Session = Row<ImpersonationSession>;

/**
 * What an impersonation session shows: mail, folders and personal information. Never secrets that
 * outlive the session (calendar share-link tokens), never keys (the key vault has its own routes).
 */
export const VIEWABLE = [
  'mailboxes',
  'folders',
  'messages',
  'labels',
  'mail-filter-rules',
  'mail-signatures',
  'calendar-events',
  'contacts',
  'contact-lists',
  'notes',
  'tasks',
  'task-lists',
];

const SESSIONS = '/api/admin/impersonation-sessions';
const OWNER = '/api/mail/mailboxes/:id/impersonation-sessions';

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
  const router = express.Router();
  const wrap = (fn: Handler) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
    try {
      await fn(ctxOf(req, deps), req, res);
    } catch (e) {
      next(e);
    }
  };
  const repo = (ctx: Ctx) => ctx.store.repo<ImpersonationSession>(ImpersonationSessionModel);
  const publish = (ctx: Ctx, s: Session) =>
    ctx.events.publish([s.uid, s.mailboxUid], { type: 'impersonationSession', action: 'update', data: { ...s } });
  const audit = (ctx: Ctx, action: string, s: Session, details: Record<string, unknown> = {}) =>
    writeAudit(ctx.store, ctx, {
      action: `impersonation-sessions.${action}`,
      resource: 'impersonation-sessions',
      resourceUid: s.uid,
      details: { mailboxUid: s.mailboxUid, ...details },
    });
  const live = (s: Session) => s.expiresAt !== null && new Date(s.expiresAt) > new Date();

  // --- the owner's side -------------------------------------------------------------------------
  const ownerSession = async (ctx: Ctx, req: Request): Promise<Session> => {
    await requireOwner(ctx, String(req.params.id));
    const s = await repo(ctx).get(String(req.params.sid));
    if (!s || s.mailboxUid !== String(req.params.id)) throw notFound();
    return s;
  };
  router.get(
    OWNER,
    wrap(async (ctx, req, res) => {
      await requireOwner(ctx, String(req.params.id));
      res.json(
        await repo(ctx).list({ filter: { mailboxUid: String(req.params.id) }, sort: [{ field: 'createdAt', dir: 'desc' }], limit: 1000 }),
      );
    }),
  );
  openapi.add('get', OWNER, {
    operationId: 'mail_mailboxes_impersonation_sessions',
    summary: 'The owner sees every impersonation request for the mailbox: who asked, why, its state, and how many reads were made',
    tags: ['mail/mailboxes'],
    auth: 'signed-in',
    responses: { 200: { description: 'sessions, newest first' } },
  });

  router.post(
    `${OWNER}/:sid/approve`,
    wrap(async (ctx, req, res) => {
      const s = await ownerSession(ctx, req);
      if (s.state !== 'pending' || !live(s))
        throw new ApiError('api-120', `the session is ${s.state === 'pending' ? 'past its consent time' : s.state}`);
      const until = new Date(Date.now() + ctx.config.get('mail:impersonation:session_minutes') * 60_000);
      const after = await repo(ctx).update(
        s.uid,
        { state: 'active', decidedBy: ctx.principal.uid, decidedAt: new Date(), expiresAt: until },
        { expectedVersion: s.version },
      );
      await audit(ctx, 'approve', after, { expiresAt: until.toISOString() });
      publish(ctx, after);
      res.json(after);
    }),
  );
  openapi.add('post', `${OWNER}/:sid/approve`, {
    operationId: 'mail_mailboxes_impersonation_approve',
    summary: 'The owner consents: the session becomes active, read-only, for mail:impersonation:session_minutes (audited)',
    tags: ['mail/mailboxes'],
    auth: 'signed-in',
    responses: { 200: { description: 'the active session' } },
  });

  router.post(
    `${OWNER}/:sid/decline`,
    wrap(async (ctx, req, res) => {
      const s = await ownerSession(ctx, req);
      if (s.state !== 'pending' && s.state !== 'active') throw new ApiError('api-120', `the session is ${s.state}`);
      const after = await repo(ctx).update(
        s.uid,
        { state: s.state === 'pending' ? 'declined' : 'ended', decidedBy: ctx.principal.uid, decidedAt: new Date() },
        { expectedVersion: s.version },
      );
      await audit(ctx, s.state === 'pending' ? 'decline' : 'revoke', after);
      publish(ctx, after);
      res.json(after);
    }),
  );
  openapi.add('post', `${OWNER}/:sid/decline`, {
    operationId: 'mail_mailboxes_impersonation_decline',
    summary: 'The owner refuses a pending session, or ends an active one at once (audited)',
    tags: ['mail/mailboxes'],
    auth: 'signed-in',
    responses: { 200: { description: 'the declined or ended session' } },
  });

  // --- the administrator's side -----------------------------------------------------------------
  router.post(
    `${SESSIONS}/:id/end`,
    wrap(async (ctx, req, res) => {
      requireTrusted(ctx.principal, ctx.config, { fresh: true });
      const s = await repo(ctx).get(String(req.params.id));
      if (!s) throw notFound();
      if (s.state !== 'pending' && s.state !== 'active') throw new ApiError('api-120', `the session is ${s.state}`);
      const after = await repo(ctx).update(s.uid, { state: 'ended' }, { expectedVersion: s.version });
      await audit(ctx, 'end', after);
      publish(ctx, after);
      res.json(after);
    }),
  );
  openapi.add('post', `${SESSIONS}/:id/end`, {
    operationId: 'admin_impersonation_sessions_end',
    summary: 'End a pending or active session (trusted role, fresh elevation, audited)',
    tags: ['admin/impersonation-sessions'],
    auth: 'trusted-fresh',
    responses: { 200: { description: 'the ended session' } },
  });

  /** The session the caller reads through: theirs, active, not expired — anything else is 404, like mail they cannot see. */
  async function activeSession(ctx: Ctx, uid: string): Promise<Session> {
    requireTrusted(ctx.principal, ctx.config, { fresh: true });
    const s = await repo(ctx).get(uid);
    if (!s || s.requestedBy !== ctx.principal.uid || s.state !== 'active') throw notFound();
    if (!live(s)) {
      await repo(ctx).updateMany({ uid: s.uid, state: 'active' }, { state: 'expired' });
      throw notFound();
    }
    return s;
  }
  const viewable = (name: string): ResourceDecl => {
    if (!VIEWABLE.includes(name)) throw notFound();
    return service.registry.get(name);
  };
  const counted = async (ctx: Ctx, s: Session, details: Record<string, unknown>) => {
    await repo(ctx).increment(s.uid, { reads: 1 });
    await audit(ctx, 'read', s, details);
  };
  const V = `${SESSIONS}/:id/view`;

  router.get(
    `${V}/messages/:uid/body`,
    wrap(async (ctx, req, res) => {
      const s = await activeSession(ctx, String(req.params.id));
      const msg = await ctx.store.repo<Message>(viewable('messages').model).get(String(req.params.uid));
      if (!msg || msg.mailboxUid !== s.mailboxUid) throw notFound();
      await counted(ctx, s, { resource: 'messages', uid: msg.uid, part: 'body' });
      if (msg.smime === 'encrypted') {
        res.json({ encrypted: true, text: null, html: null }); // ciphertext stays ciphertext for everyone
        return;
      }
      const parsed = await parseMessage(await blobsOf(ctx).get(msg.blobId));
      res.json({ encrypted: false, text: parsed.text, html: parsed.html === null ? null : sanitizeMailHtml(parsed.html) });
    }),
  );
  router.get(
    `${V}/:resource`,
    wrap(async (ctx, req, res) => {
      const s = await activeSession(ctx, String(req.params.id));
      const decl = viewable(String(req.params.resource));
      const q = parseListQuery(decl, req.query as QueryParams);
      // Whatever the query names, the mailbox is pinned: a session never reaches another mailbox.
      const rows = await ctx.store
        .repo<Record<string, unknown>>(decl.model)
        .list({ ...q, filter: { ...q.filter, [decl.mailboxField!]: s.mailboxUid } });
      await counted(ctx, s, { resource: decl.name, count: rows.length, filter: q.filter as Record<string, unknown> });
      res.json(rows.map((r) => service.view(decl, r)));
    }),
  );
  router.get(
    `${V}/:resource/:uid`,
    wrap(async (ctx, req, res) => {
      const s = await activeSession(ctx, String(req.params.id));
      const decl = viewable(String(req.params.resource));
      const rec = await ctx.store.repo<Record<string, unknown>>(decl.model).get(String(req.params.uid));
      if (!rec || rec[decl.mailboxField!] !== s.mailboxUid) throw notFound();
      await counted(ctx, s, { resource: decl.name, uid: rec.uid });
      res.json(service.view(decl, rec));
    }),
  );
  // Read-only: every other method under /view is refused, after the same elevation check.
  router.all(
    `${V}/*rest`,
    wrap(async (ctx, req) => {
      requireTrusted(ctx.principal, ctx.config, { fresh: true });
      if (req.method === 'GET' || req.method === 'HEAD') throw notFound();
      throw new ApiError('api-102', 'impersonation sessions are read-only');
    }),
  );
  const viewDoc = (summary: string, op: string) => ({
    operationId: `admin_impersonation_sessions_view_${op}`,
    summary,
    description: `Resources: ${VIEWABLE.join(', ')}. Only the administrator who asked, with fresh elevation, while the session is active; otherwise 404. Every read is audited (impersonation-sessions.read) and counted on the session. Other methods answer 403 api-102.`,
    tags: ['admin/impersonation-sessions'],
    auth: 'trusted-fresh' as const,
    responses: { 200: { description: 'read-only data of the impersonated mailbox' } },
  });
  openapi.add(
    'get',
    `${V}/:resource`,
    viewDoc('List records of the impersonated mailbox (the generic list query: filters, sort, limit, page)', 'list'),
  );
  openapi.add('get', `${V}/:resource/:uid`, viewDoc('Read one record of the impersonated mailbox', 'get'));
  openapi.add(
    'get',
    `${V}/messages/:uid/body`,
    viewDoc('The text and sanitized HTML of a message of the impersonated mailbox ({encrypted: true} for S/MIME ciphertext)', 'body'),
  );
  return router;
}
