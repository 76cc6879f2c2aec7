import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { notFound, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import { jsonSchema, type OpenApiRegistry } from '../http/index.js';
import { mailPort, recordingOutbound } from '../ingest/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { eventsToIcs, icsToEvents, occurrences, type EventData } from './ics.js';
import { CalendarEventModel, CalendarShareLinkModel, ContactModel } from './models.js';
import { respondBody, respondToInvitation } from './respond.js';
import { contactsToVcf, vcfToContacts, type ContactData } from './vcard.js';

const TEXT_LIMIT = '5mb';
const MAX_ITEMS = 10_000;
const rangeQuery = z
  .object({ mailboxUid: z.string().min(1), from: z.coerce.date(), to: z.coerce.date() })
  .strict()
  .refine((q) => q.to > q.from && q.to.getTime() - q.from.getTime() <= 366 * 86_400_000, 'to must be after from, at most a year later');
const mailboxQuery = z.object({ mailboxUid: z.string().min(1) }).strict();

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

/**
 * Calendar and contact exchange formats: ICS export/import and occurrence expansion, vCard
 * export/import, and the public feed of calendar share links. Mount before the generic routes.
 */
export function pimRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const wrap = (fn: Handler) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
    try {
      await fn(ctxOf(req, deps), req, res);
    } catch (e) {
      next(e);
    }
  };
  const text = express.text({ type: ['text/calendar', 'text/vcard', 'text/x-vcard', 'text/plain'], limit: TEXT_LIMIT });
  /** The mailbox must be readable by the caller with trusted roles stripped (404 otherwise). */
  const mailbox = async (ctx: Ctx, uid: string, right: 'read' | 'write' = 'read') =>
    service.load(ctx, service.registry.get('mailboxes'), uid, right);
  const eventsOf = async (ctx: Ctx, mailboxUid: string) =>
    await ctx.store
      .repo<EventData>(CalendarEventModel)
      .list({ filter: { mailboxUid }, sort: [{ field: 'start', dir: 'asc' }], limit: MAX_ITEMS });

  router.get(
    '/api/mail/calendar-events/occurrences',
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(rangeQuery, req.query, 'occurrences need ?mailboxUid=&from=&to=');
      await mailbox(ctx, q.mailboxUid);
      const events = await eventsOf(ctx, q.mailboxUid);
      const exceptions = new Map(
        events.filter((e) => e.recurrenceId).map((e) => [`${e.icalUid}|${new Date(e.recurrenceId!).getTime()}`, e]),
      );
      const out = events
        .filter((e) => !e.recurrenceId && e.status !== 'cancelled')
        .flatMap((e) =>
          occurrences(e, q.from, q.to)
            .filter((o) => !exceptions.has(`${e.icalUid}|${o.start.getTime()}`))
            .map((o) => ({
              eventUid: (e as EventData & { uid: string }).uid,
              summary: e.summary,
              start: o.start,
              end: o.end,
              allDay: e.allDay,
            })),
        );
      const moved = [...exceptions.values()]
        .filter((x) => x.status !== 'cancelled' && new Date(x.start) < q.to && new Date(x.end) > q.from)
        .map((x) => ({
          eventUid: (x as EventData & { uid: string }).uid,
          summary: x.summary,
          start: new Date(x.start),
          end: new Date(x.end),
          allDay: x.allDay,
        }));
      res.json([...out, ...moved].sort((a, b) => a.start.getTime() - b.start.getTime()));
    }),
  );
  openapi.add('get', '/api/mail/calendar-events/occurrences', {
    operationId: 'mail_calendar_events_occurrences',
    summary: "Occurrences of the mailbox calendar in a range (recurrences expanded in each event's time zone, exceptions applied)",
    tags: ['mail/calendar-events'],
    auth: 'signed-in',
    parameters: [
      { name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } },
      { name: 'from', in: 'query', required: true, schema: { type: 'string', format: 'date-time' } },
      { name: 'to', in: 'query', required: true, schema: { type: 'string', format: 'date-time' } },
    ],
    responses: { 200: { description: 'occurrences, earliest first', schema: { type: 'array', items: { type: 'object' } } } },
  });

  router.get(
    '/api/mail/calendar-events/export',
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(mailboxQuery, req.query, 'export needs ?mailboxUid=');
      await mailbox(ctx, q.mailboxUid);
      res
        .attachment('calendar.ics')
        .set('Content-Type', 'text/calendar; charset=utf-8')
        .send(eventsToIcs(await eventsOf(ctx, q.mailboxUid)));
    }),
  );
  openapi.add('get', '/api/mail/calendar-events/export', {
    operationId: 'mail_calendar_events_export',
    summary: 'The mailbox calendar as iCalendar',
    tags: ['mail/calendar-events'],
    auth: 'signed-in',
    parameters: [{ name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } }],
    responses: { 200: { description: 'text/calendar', contentType: 'text/calendar', schema: { type: 'string' } } },
  });

  router.post(
    '/api/mail/calendar-events/import',
    text,
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(mailboxQuery, req.query, 'import needs ?mailboxUid=');
      await mailbox(ctx, q.mailboxUid, 'write');
      const { events } = icsToEvents(typeof req.body === 'string' ? req.body : '');
      const results = [];
      for (const ev of events) {
        try {
          const { sequence: _s, ...input } = ev;
          const rec = await service.create(ctx, service.registry.get('calendar-events'), { ...input, mailboxUid: q.mailboxUid });
          results.push({ status: 201, uid: rec.uid, icalUid: ev.icalUid });
        } catch (e) {
          results.push({
            status: (e as { status?: number }).status ?? 500,
            icalUid: ev.icalUid,
            message: (e as { status?: number }).status ? (e as Error).message : 'internal error',
          });
        }
      }
      res.json({
        imported: results.filter((r) => r.status === 201).length,
        failed: results.filter((r) => r.status !== 201).length,
        results,
      });
    }),
  );
  openapi.add('post', '/api/mail/calendar-events/import', {
    operationId: 'mail_calendar_events_import',
    summary: 'Import iCalendar text (text/calendar) into the mailbox calendar; each event succeeds or fails on its own',
    tags: ['mail/calendar-events'],
    auth: 'signed-in',
    parameters: [{ name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } }],
    requestBody: { contentType: 'text/calendar', schema: { type: 'string' } },
    responses: { 200: { description: 'a result per event', schema: { type: 'object' } } },
  });

  const outbound = recordingOutbound(deps, mailPort(deps));
  router.post(
    '/api/mail/calendar-events/:id/respond',
    wrap(async (ctx, req, res) => {
      res.json(await respondToInvitation(ctx, service, outbound, String(req.params.id), req.body));
    }),
  );
  openapi.add('post', '/api/mail/calendar-events/:id/respond', {
    operationId: 'mail_calendar_events_respond',
    tags: ['mail/calendar-events'],
    auth: 'signed-in',
    summary: "Answer a meeting invitation: sets this mailbox's PARTSTAT and sends an iTIP REPLY to the organizer through the outbound path",
    description:
      'Needs write on the event (owner or a share with write); others get 404. 409 api-120 when the event has no organizer, is organized by this mailbox, does not list the mailbox as an attendee, or was cancelled by the organizer. Accepted events become confirmed, tentative ones tentative, declined ones cancelled.',
    parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }],
    requestBody: { schema: jsonSchema(respondBody, 'input') },
    responses: { 200: { description: 'the updated event', schema: { type: 'object' } } },
  });

  router.get(
    '/api/mail/contacts/export',
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(mailboxQuery, req.query, 'export needs ?mailboxUid=');
      await mailbox(ctx, q.mailboxUid);
      const contacts = await ctx.store
        .repo<ContactData>(ContactModel)
        .list({ filter: { mailboxUid: q.mailboxUid }, sort: [{ field: 'fn', dir: 'asc' }], limit: MAX_ITEMS });
      res.attachment('contacts.vcf').set('Content-Type', 'text/vcard; charset=utf-8').send(contactsToVcf(contacts));
    }),
  );
  openapi.add('get', '/api/mail/contacts/export', {
    operationId: 'mail_contacts_export',
    summary: 'The mailbox contacts as vCard 4.0',
    tags: ['mail/contacts'],
    auth: 'signed-in',
    parameters: [{ name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } }],
    responses: { 200: { description: 'text/vcard', contentType: 'text/vcard', schema: { type: 'string' } } },
  });

  router.post(
    '/api/mail/contacts/import',
    text,
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(mailboxQuery, req.query, 'import needs ?mailboxUid=');
      await mailbox(ctx, q.mailboxUid, 'write');
      const results = [];
      for (const [i, card] of vcfToContacts(typeof req.body === 'string' ? req.body : '').entries()) {
        if (!card.ok) {
          results.push({ index: i, status: 400, message: card.error });
          continue;
        }
        try {
          const { vcardUid, ...rest } = card.contact;
          const rec = await service.create(ctx, service.registry.get('contacts'), {
            ...rest,
            ...(vcardUid ? { vcardUid } : {}),
            mailboxUid: q.mailboxUid,
          });
          results.push({ index: i, status: 201, uid: rec.uid });
        } catch (e) {
          results.push({
            index: i,
            status: (e as { status?: number }).status ?? 500,
            message: (e as { status?: number }).status ? (e as Error).message : 'internal error',
          });
        }
      }
      res.json({
        imported: results.filter((r) => r.status === 201).length,
        failed: results.filter((r) => r.status !== 201).length,
        results,
      });
    }),
  );
  openapi.add('post', '/api/mail/contacts/import', {
    operationId: 'mail_contacts_import',
    summary: 'Import vCard text (3.0 or 4.0); each card succeeds or fails on its own',
    tags: ['mail/contacts'],
    auth: 'signed-in',
    parameters: [{ name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } }],
    requestBody: { contentType: 'text/vcard', schema: { type: 'string' } },
    responses: { 200: { description: 'a result per card', schema: { type: 'object' } } },
  });

  // Public: the secret in the path is the credential (no sign-in). Revoked or unknown links are 404.
  router.get('/api/mail/calendar-share-links/feed/:token', async (req, res, next) => {
    try {
      const token = String(req.params.token);
      const link = /^[\w-]{43}$/.test(token)
        ? await deps.store.repo<{ mailboxUid: string; revoked: boolean; name: string }>(CalendarShareLinkModel).findOne({ token })
        : null;
      if (!link || link.revoked) throw notFound();
      const events = await deps.store
        .repo<EventData>(CalendarEventModel)
        .list({ filter: { mailboxUid: link.mailboxUid }, sort: [{ field: 'start', dir: 'asc' }], limit: MAX_ITEMS });
      // A published feed shows times and titles, never who else attends.
      res.type('text/calendar; charset=utf-8').send(
        eventsToIcs(
          events.map((e) => ({ ...e, attendees: [], organizer: null })),
          link.name || undefined,
        ),
      );
    } catch (e) {
      next(e);
    }
  });
  openapi.add('get', '/api/mail/calendar-share-links/feed/:token', {
    operationId: 'mail_calendar_share_links_feed',
    summary: 'Read-only ICS feed of a calendar share link (the token is the credential; revoked links answer 404)',
    tags: ['mail/calendar-share-links'],
    auth: 'none',
    responses: { 200: { description: 'text/calendar', contentType: 'text/calendar', schema: { type: 'string' } } },
  });
  return router;
}
