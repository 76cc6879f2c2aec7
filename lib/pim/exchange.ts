// Calendar and contact exchange: occurrence expansion, ICS and vCard export and import, and the
// public feed of a calendar share link. Service functions: the routes in routes.ts call them.
import { notFound } from '../errors/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { eventsToIcs, icsToEvents, occurrences, type EventData } from './ics.js';
import { CalendarEventModel, CalendarShareLinkModel, ContactModel } from './models.js';
import { contactsToVcf, vcfToContacts, type ContactData } from './vcard.js';

const MAX_ITEMS = 10_000;

type StoredEvent = EventData & { uid: string };

/** One imported item's outcome: 201 with its uid, or the status and message of its refusal. */
export type ImportResult = { status: number; uid?: string; message?: string };

/** The status and message an item's failure answers (an unexpected error stays an internal one). */
function failure(e: unknown): { status: number; message: string } {
  const status = (e as { status?: number }).status;
  return { status: status ?? 500, message: status ? (e as Error).message : 'internal error' };
}

function summarize<R extends ImportResult>(results: R[]) {
  return {
    imported: results.filter((r) => r.status === 201).length,
    failed: results.filter((r) => r.status !== 201).length,
    results,
  };
}

/** Exchange services for one resource service (the registry's mailboxes, events and contacts, access checked through it). */
export function pimExchange(service: ResourceService) {
  /** The mailbox must be open to the caller with trusted roles stripped (404 otherwise). */
  const mailbox = async (ctx: Ctx, uid: string, right: 'read' | 'write' = 'read') =>
    service.load(ctx, service.registry.get('mailboxes'), uid, right);
  const eventsOf = async (ctx: Pick<Ctx, 'store'>, mailboxUid: string) =>
    await ctx.store
      .repo<EventData>(CalendarEventModel)
      .list({ filter: { mailboxUid }, sort: [{ field: 'start', dir: 'asc' }], limit: MAX_ITEMS });

  return {
    /** Occurrences in [from, to), earliest first: recurrences expanded, moved and cancelled exceptions applied. */
    async occurrences(ctx: Ctx, mailboxUid: string, from: Date, to: Date) {
      await mailbox(ctx, mailboxUid);
      const events = (await eventsOf(ctx, mailboxUid)) as StoredEvent[];
      const exceptions = new Map(
        events.filter((e) => e.recurrenceId).map((e) => [`${e.icalUid}|${new Date(e.recurrenceId!).getTime()}`, e]),
      );
      const out = events
        .filter((e) => !e.recurrenceId && e.status !== 'cancelled')
        .flatMap((e) =>
          occurrences(e, from, to)
            .filter((o) => !exceptions.has(`${e.icalUid}|${o.start.getTime()}`))
            .map((o) => ({ eventUid: e.uid, summary: e.summary, start: o.start, end: o.end, allDay: e.allDay })),
        );
      const moved = [...exceptions.values()]
        .filter((x) => x.status !== 'cancelled' && new Date(x.start) < to && new Date(x.end) > from)
        .map((x) => ({ eventUid: x.uid, summary: x.summary, start: new Date(x.start), end: new Date(x.end), allDay: x.allDay }));
      return [...out, ...moved].sort((a, b) => a.start.getTime() - b.start.getTime());
    },

    /** The mailbox calendar as iCalendar text. */
    async exportIcs(ctx: Ctx, mailboxUid: string): Promise<string> {
      await mailbox(ctx, mailboxUid);
      return eventsToIcs(await eventsOf(ctx, mailboxUid));
    },

    /** Creates each event of the iCalendar text; each one succeeds or fails on its own. */
    async importIcs(ctx: Ctx, mailboxUid: string, text: string) {
      await mailbox(ctx, mailboxUid, 'write');
      const results: Array<ImportResult & { icalUid?: string | null }> = [];
      for (const ev of icsToEvents(text).events) {
        try {
          const { sequence: _s, ...input } = ev;
          const rec = await service.create(ctx, service.registry.get('calendar-events'), { ...input, mailboxUid });
          results.push({ status: 201, uid: rec.uid as string, icalUid: ev.icalUid });
        } catch (e) {
          const { status, message } = failure(e);
          results.push({ status, icalUid: ev.icalUid, message });
        }
      }
      return summarize(results);
    },

    /** The mailbox contacts as vCard 4.0 text. */
    async exportVcf(ctx: Ctx, mailboxUid: string): Promise<string> {
      await mailbox(ctx, mailboxUid);
      const contacts = await ctx.store
        .repo<ContactData>(ContactModel)
        .list({ filter: { mailboxUid }, sort: [{ field: 'fn', dir: 'asc' }], limit: MAX_ITEMS });
      return contactsToVcf(contacts);
    },

    /** Creates each card of the vCard text; each one succeeds or fails on its own. */
    async importVcf(ctx: Ctx, mailboxUid: string, text: string) {
      await mailbox(ctx, mailboxUid, 'write');
      const results: Array<ImportResult & { index: number }> = [];
      for (const [index, card] of vcfToContacts(text).entries()) {
        if (!card.ok) {
          results.push({ index, status: 400, message: card.error });
          continue;
        }
        try {
          const { vcardUid, ...rest } = card.contact;
          const rec = await service.create(ctx, service.registry.get('contacts'), {
            ...rest,
            ...(vcardUid ? { vcardUid } : {}),
            mailboxUid,
          });
          results.push({ index, status: 201, uid: rec.uid as string });
        } catch (e) {
          results.push({ index, ...failure(e) });
        }
      }
      return summarize(results);
    },
  };
}

/**
 * The iCalendar feed of a share link: the token is the credential, so an unknown, malformed or
 * revoked one is 404. A published feed shows times and titles, never who else attends.
 */
export async function shareLinkFeed(ctx: Pick<Ctx, 'store'>, token: string): Promise<string> {
  const link = /^[\w-]{43}$/.test(token)
    ? await ctx.store.repo<{ mailboxUid: string; revoked: boolean; name: string }>(CalendarShareLinkModel).findOne({ token })
    : null;
  if (!link || link.revoked) throw notFound();
  const events = await ctx.store
    .repo<EventData>(CalendarEventModel)
    .list({ filter: { mailboxUid: link.mailboxUid }, sort: [{ field: 'start', dir: 'asc' }], limit: MAX_ITEMS });
  return eventsToIcs(
    events.map((e) => ({ ...e, attendees: [], organizer: null })),
    link.name || undefined,
  );
}
