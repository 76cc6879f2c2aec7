// The out-of-office reply of a mailbox (Spec: delivery rule 6 sends it): read and changed by the
// mailbox's readers and writers through GET/PUT /api/mail/mailboxes/:id/out-of-office (the web app's
// settings) and by the protocol plugins (ActiveSync Settings).
import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Ctx, Deps } from '../context/index.js';
import { AutoReplyModel, type AutoReply } from './models.js';

/** A mailbox's out-of-office reply: on or off, between optional times, with a subject and text. */
export interface AutoReplySettings {
  enabled: boolean;
  subject: string;
  body: string;
  startsAt: Date | null;
  endsAt: Date | null;
}

const when = z.coerce.date().meta({ type: 'string', format: 'date-time' }).nullable();
const settingsBody = z
  .object({
    enabled: z.boolean(),
    subject: z.string().trim().min(1).max(998),
    body: z.string().max(100_000),
    startsAt: when.default(null).describe('replies start then (null: at once)'),
    endsAt: when.default(null).describe('and stop then (null: until turned off)'),
  })
  .strict()
  .refine((b) => !(b.startsAt && b.endsAt && b.endsAt <= b.startsAt), { message: 'endsAt must be after startsAt', path: ['endsAt'] });
const settingsAnswer = z.object({
  enabled: z.boolean(),
  subject: z.string(),
  body: z.string(),
  startsAt: z.iso.datetime().nullable(),
  endsAt: z.iso.datetime().nullable(),
});

const settingsOf = (r: AutoReply | null): AutoReplySettings => ({
  enabled: r?.enabled ?? false,
  subject: r?.subject ?? 'Out of office',
  body: r?.body ?? '',
  startsAt: r?.startsAt ?? null,
  endsAt: r?.endsAt ?? null,
});

/** The reply of a mailbox the caller can read (404 otherwise, trusted roles stripped as for any mailbox read). */
export async function readAutoReply(ctx: Ctx, service: ResourceService, mailboxUid: string): Promise<AutoReplySettings> {
  await service.load(ctx, service.registry.get('mailboxes'), mailboxUid, 'read');
  return settingsOf(await ctx.store.repo<AutoReply>(AutoReplyModel).findOne({ mailboxUid }));
}

/** Changes it: the caller must hold write on the mailbox (403 otherwise). */
export async function writeAutoReply(
  ctx: Ctx,
  service: ResourceService,
  mailboxUid: string,
  patch: Partial<AutoReplySettings>,
): Promise<AutoReplySettings> {
  await service.load(ctx, service.registry.get('mailboxes'), mailboxUid, 'write');
  const repo = ctx.store.repo<AutoReply>(AutoReplyModel);
  const found = await repo.findOne({ mailboxUid });
  const next = found
    ? await repo.update(found.uid, patch, { expectedVersion: found.version })
    : await repo.create({ ...settingsOf(null), ...patch, mailboxUid });
  return settingsOf(next);
}

const asAnswer = (s: AutoReplySettings) => ({ ...s, startsAt: s.startsAt?.toISOString() ?? null, endsAt: s.endsAt?.toISOString() ?? null });

export function autoReplyRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const tags = ['mail/mailboxes'];
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/mailboxes/:id/out-of-office',
    operationId: 'mailbox_out_of_office_get',
    summary: "The mailbox's out-of-office reply (sent once per sender and day to people, never to automated mail)",
    tags,
    auth: 'signed-in',
    response: settingsAnswer,
    errors: { 404: 'api-107: no such mailbox, or one the caller cannot read' },
    handler: async (ctx, { params }) => asAnswer(await readAutoReply(ctx, service, params.id)),
  });
  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/mail/mailboxes/:id/out-of-office',
    operationId: 'mailbox_out_of_office_put',
    summary: "Sets the mailbox's out-of-office reply: on or off, its subject and text, and an optional period",
    tags,
    auth: 'signed-in',
    body: settingsBody,
    response: settingsAnswer,
    errors: {
      403: 'api-102: the caller may read the mailbox but not change it',
      404: 'api-107: no such mailbox, or one the caller cannot read',
    },
    handler: async (ctx, { params, body }) => asAnswer(await writeAutoReply(ctx, service, params.id, body)),
  });
  return router;
}
