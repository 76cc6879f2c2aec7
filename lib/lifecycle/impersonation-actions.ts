// What audited impersonation does (see impersonation.ts for the design): the owner lists, approves
// and declines sessions; an administrator ends them; the administrator who asked reads through an
// active one, each read audited and counted. Service functions: impersonation.ts routes call them.
import { writeAudit } from '../audit/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { blobsOf, parseMessage, type Message } from '../mail/index.js';
import { parseListQuery, type QueryParams, type ResourceDecl, type ResourceService } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { sanitizeMailHtml } from '../scan/index.js';
import type { Row } from '../storage/index.js';
import { ImpersonationSessionModel, type ImpersonationSession } from './models.js';
import { requireOwner } from './resources.js';

export type Session = Row<ImpersonationSession>;

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

const repo = (ctx: Ctx) => ctx.store.repo<ImpersonationSession>(ImpersonationSessionModel);
const live = (s: Session) => s.expiresAt !== null && new Date(s.expiresAt) > new Date();

const audit = (ctx: Ctx, action: string, s: Session, details: Record<string, unknown> = {}) =>
  writeAudit(ctx.store, ctx, {
    action: `impersonation-sessions.${action}`,
    resource: 'impersonation-sessions',
    resourceUid: s.uid,
    details: { mailboxUid: s.mailboxUid, ...details },
  });

/** Saves a change of state, audits it and tells the session's and the mailbox's channels. */
async function change(ctx: Ctx, s: Session, patch: Partial<ImpersonationSession>, action: string, details?: Record<string, unknown>) {
  const after = await repo(ctx).update(s.uid, patch, { expectedVersion: s.version });
  await audit(ctx, action, after, details);
  ctx.events.publish([after.uid, after.mailboxUid], { type: 'impersonationSession', action: 'update', data: { ...after } });
  return after;
}

// --- the owner's side ---------------------------------------------------------------------------

/** Every impersonation request for a mailbox the caller owns, newest first. */
export async function sessionsOf(ctx: Ctx, mailboxUid: string): Promise<Session[]> {
  await requireOwner(ctx, mailboxUid);
  return await repo(ctx).list({ filter: { mailboxUid }, sort: [{ field: 'createdAt', dir: 'desc' }], limit: 1000 });
}

/** A session of a mailbox the caller owns (404 when it is another mailbox's). */
async function ownerSession(ctx: Ctx, mailboxUid: string, sid: string): Promise<Session> {
  await requireOwner(ctx, mailboxUid);
  const s = await repo(ctx).get(sid);
  if (!s || s.mailboxUid !== mailboxUid) throw notFound();
  return s;
}

/** The owner consents: the pending session becomes active for mail:impersonation:session_minutes. */
export async function approveSession(ctx: Ctx, mailboxUid: string, sid: string): Promise<Session> {
  const s = await ownerSession(ctx, mailboxUid, sid);
  if (s.state !== 'pending' || !live(s))
    throw new ApiError('api-120', `the session is ${s.state === 'pending' ? 'past its consent time' : s.state}`);
  const until = new Date(Date.now() + ctx.config.get('mail:impersonation:session_minutes') * 60_000);
  return await change(ctx, s, { state: 'active', decidedBy: ctx.principal.uid, decidedAt: new Date(), expiresAt: until }, 'approve', {
    expiresAt: until.toISOString(),
  });
}

/** The owner refuses a pending session, or ends an active one at once. */
export async function declineSession(ctx: Ctx, mailboxUid: string, sid: string): Promise<Session> {
  const s = await ownerSession(ctx, mailboxUid, sid);
  if (s.state !== 'pending' && s.state !== 'active') throw new ApiError('api-120', `the session is ${s.state}`);
  const pending = s.state === 'pending';
  return await change(
    ctx,
    s,
    { state: pending ? 'declined' : 'ended', decidedBy: ctx.principal.uid, decidedAt: new Date() },
    pending ? 'decline' : 'revoke',
  );
}

// --- the administrator's side -------------------------------------------------------------------

/** An administrator ends a pending or active session (the route checks the trusted role and fresh elevation). */
export async function endSession(ctx: Ctx, uid: string): Promise<Session> {
  const s = await repo(ctx).get(uid);
  if (!s) throw notFound();
  if (s.state !== 'pending' && s.state !== 'active') throw new ApiError('api-120', `the session is ${s.state}`);
  return await change(ctx, s, { state: 'ended' }, 'end');
}

/** Reads through an active session, for the administrator who asked; each read is audited and counted. */
export function sessionReader(service: ResourceService) {
  /** The session the caller reads through: theirs, active, not expired — anything else is 404, like mail they cannot see. */
  async function activeSession(ctx: Ctx, uid: string): Promise<Session> {
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

  return {
    /** The text and sanitized HTML of a message; ciphertext stays ciphertext for everyone. */
    async body(ctx: Ctx, sid: string, uid: string) {
      const s = await activeSession(ctx, sid);
      const msg = await ctx.store.repo<Message>(viewable('messages').model).get(uid);
      if (!msg || msg.mailboxUid !== s.mailboxUid) throw notFound();
      await counted(ctx, s, { resource: 'messages', uid: msg.uid, part: 'body' });
      if (msg.smime === 'encrypted') return { encrypted: true, text: null, html: null };
      const parsed = await parseMessage(await blobsOf(ctx).get(msg.blobId));
      return { encrypted: false, text: parsed.text, html: parsed.html === null ? null : sanitizeMailHtml(parsed.html) };
    },

    /** Records of the mailbox by the generic list query; whatever it names, the mailbox is pinned to the session's. */
    async list(ctx: Ctx, sid: string, resource: string, query: QueryParams) {
      const s = await activeSession(ctx, sid);
      const decl = viewable(resource);
      const q = parseListQuery(decl, query);
      const rows = await ctx.store
        .repo<Record<string, unknown>>(decl.model)
        .list({ ...q, filter: { ...q.filter, [decl.mailboxField!]: s.mailboxUid } });
      await counted(ctx, s, { resource: decl.name, count: rows.length, filter: q.filter as Record<string, unknown> });
      return rows.map((r) => service.view(decl, r));
    },

    /** One record of the mailbox (404 when it is another mailbox's). */
    async get(ctx: Ctx, sid: string, resource: string, uid: string) {
      const s = await activeSession(ctx, sid);
      const decl = viewable(resource);
      const rec = await ctx.store.repo<Record<string, unknown>>(decl.model).get(uid);
      if (!rec || rec[decl.mailboxField!] !== s.mailboxUid) throw notFound();
      await counted(ctx, s, { resource: decl.name, uid: rec.uid });
      return service.view(decl, rec);
    },
  };
}
