import express, { type RequestHandler, type Response, type Router } from 'express';
import { z } from 'zod';
import { isoDate, defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { OutboundHook } from '../mail/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import { calendarEventsResource } from './resources.js';
import { type Deps } from '../context/index.js';
import { pimExchange, shareLinkFeed } from './exchange.js';
import { respondBody, respondToInvitation } from './respond.js';

const TEXT_LIMIT = '5mb';
/** A date-time in the query: any text Date reads, documented as ISO 8601. */
const when = z.coerce.date().meta({ type: 'string', format: 'date-time' });
const mailboxQuery = z.object({ mailboxUid: z.string().min(1) });
const rangeQuery = mailboxQuery
  .extend({ from: when, to: when })
  .refine((q) => q.to > q.from && q.to.getTime() - q.from.getTime() <= 366 * 86_400_000, 'to must be after from, at most a year later');

const occurrence = z.object({
  eventUid: z.string(),
  summary: z.string(),
  start: isoDate,
  end: isoDate,
  allDay: z.boolean(),
});
const itemResult = z.object({ status: z.number().int(), uid: z.string().optional(), message: z.string().optional() });
const importAnswer = <T extends z.ZodObject>(item: T) =>
  z.object({ imported: z.number().int(), failed: z.number().int(), results: z.array(item) });

/** The text an exchange-format body carries (empty when the body was of another type). */
const textOf = (body: unknown) => (typeof body === 'string' ? body : '');

function sendText(res: Response, contentType: string, text: string, filename?: string): void {
  if (filename) res.attachment(filename);
  res.set('Content-Type', `${contentType}; charset=utf-8`).send(text);
}

/** What the route groups share: where to declare, the services, the text body parser. */
interface PimRoutes {
  router: Router;
  deps: Deps;
  openapi: OpenApiRegistry;
  service: ResourceService;
  pim: ReturnType<typeof pimExchange>;
  text: RequestHandler;
  /** Where iTIP replies go out (the api daemon hands the ingest folder's recording hook). */
  outbound: OutboundHook;
}

const events = ['mail/calendar-events'];
const contacts = ['mail/contacts'];

/** The mailbox calendar: occurrences, ICS export and import, answers to invitations. */
function calendarRoutes({ router, deps, openapi, service, pim, text, outbound }: PimRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/calendar-events/occurrences',
    operationId: 'mail_calendar_events_occurrences',
    summary: "Occurrences of the mailbox calendar in a range (recurrences expanded in each event's time zone, exceptions applied)",
    tags: events,
    auth: 'signed-in',
    query: rangeQuery,
    response: z.array(occurrence).describe('occurrences, earliest first'),
    handler: (ctx, { query }) => pim.occurrences(ctx, query.mailboxUid, query.from, query.to),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/calendar-events/export',
    operationId: 'mail_calendar_events_export',
    summary: 'The mailbox calendar as iCalendar',
    tags: events,
    auth: 'signed-in',
    query: mailboxQuery,
    rawResponse: { description: 'text/calendar', contentType: 'text/calendar' },
    handler: async (ctx, { query }, _req, res) =>
      sendText(res, 'text/calendar', await pim.exportIcs(ctx, query.mailboxUid), 'calendar.ics'),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/calendar-events/import',
    operationId: 'mail_calendar_events_import',
    summary: 'Import iCalendar text (text/calendar) into the mailbox calendar; each event succeeds or fails on its own',
    tags: events,
    auth: 'signed-in',
    before: [text],
    query: mailboxQuery,
    rawBody: { contentType: 'text/calendar' },
    response: importAnswer(itemResult.extend({ icalUid: z.string().nullish() })).describe('a result per event'),
    handler: (ctx, { query }, req) => pim.importIcs(ctx, query.mailboxUid, textOf(req.body)),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/calendar-events/:id/respond',
    operationId: 'mail_calendar_events_respond',
    summary: "Answer a meeting invitation: sets this mailbox's PARTSTAT and sends an iTIP REPLY to the organizer through the outbound path",
    description:
      'Needs write on the event (owner or a share with write); others get 404. 409 api-120 when the event has no organizer, is organized by this mailbox, does not list the mailbox as an attendee, or was cancelled by the organizer. Accepted events become confirmed, tentative ones tentative, declined ones cancelled.',
    tags: events,
    auth: 'signed-in',
    body: respondBody,
    response: schemasOf(calendarEventsResource).record.describe('the updated event'),
    errors: { 409: 'api-120: the event cannot be answered by this mailbox' },
    handler: (ctx, { params, body }) => respondToInvitation(ctx, service, outbound, params.id, body),
  });
}

/** The mailbox contacts: vCard export and import. */
function contactRoutes({ router, deps, openapi, pim, text }: PimRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/contacts/export',
    operationId: 'mail_contacts_export',
    summary: 'The mailbox contacts as vCard 4.0',
    tags: contacts,
    auth: 'signed-in',
    query: mailboxQuery,
    rawResponse: { description: 'text/vcard', contentType: 'text/vcard' },
    handler: async (ctx, { query }, _req, res) => sendText(res, 'text/vcard', await pim.exportVcf(ctx, query.mailboxUid), 'contacts.vcf'),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/contacts/import',
    operationId: 'mail_contacts_import',
    summary: 'Import vCard text (3.0 or 4.0); each card succeeds or fails on its own',
    tags: contacts,
    auth: 'signed-in',
    before: [text],
    query: mailboxQuery,
    rawBody: { contentType: 'text/vcard' },
    response: importAnswer(itemResult.extend({ index: z.number().int() })).describe('a result per card'),
    handler: (ctx, { query }, req) => pim.importVcf(ctx, query.mailboxUid, textOf(req.body)),
  });
}

/** The public feed of a calendar share link: the secret in the path is the credential (no sign-in). */
function feedRoute({ router, deps, openapi }: PimRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/mail/calendar-share-links/feed/:token',
    operationId: 'mail_calendar_share_links_feed',
    summary: 'Read-only ICS feed of a calendar share link (the token is the credential; revoked links answer 404)',
    tags: ['mail/calendar-share-links'],
    auth: 'none',
    rawResponse: { description: 'text/calendar', contentType: 'text/calendar' },
    handler: async (ctx, { params }, _req, res) => sendText(res, 'text/calendar', await shareLinkFeed(ctx, params.token)),
  });
}

/**
 * Calendar and contact exchange formats: ICS export/import and occurrence expansion, vCard
 * export/import, and the public feed of calendar share links. Mount before the generic routes.
 */
export function pimRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry, outbound: OutboundHook): Router {
  const text = express.text({ type: ['text/calendar', 'text/vcard', 'text/x-vcard', 'text/plain'], limit: TEXT_LIMIT });
  const routes: PimRoutes = { router: express.Router(), deps, openapi, service, pim: pimExchange(service), text, outbound };
  calendarRoutes(routes);
  contactRoutes(routes);
  feedRoute(routes);
  return routes.router;
}
