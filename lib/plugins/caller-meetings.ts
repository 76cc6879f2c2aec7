import type { Ctx } from '../context/index.js';
import { notFound } from '../errors/index.js';
import { recordingOutbound, mailPort } from '../ingest/index.js';
import { loadRaw, parseMail, type MessageRecord } from '../mail/index.js';
import { calendarPartsOf, respondToInvitation } from '../pim/index.js';
import type { ResourceService } from '../resources/index.js';
import type { CallerApi } from './types.js';

/** The iCalendar UID of a text (the first UID property, unfolded). */
const icalUidOf = (ics: string) => /^UID:(.+)$/m.exec(ics.replace(/\r?\n[ \t]/g, ''))?.[1]?.trim() ?? null;

/**
 * Answers a meeting invitation for a caller (Spec: Meeting invitations): the item is the event
 * itself, or the invitation message whose iCalendar UID names the event delivery filed. The answer
 * goes through the same path as the web app's: the event's PARTSTAT, an iTIP REPLY to the organizer
 * (queued as an outbound hand-off for the worker to relay).
 */
export function meetingApi(ctx: Ctx, service: ResourceService): Pick<CallerApi, 'answerInvitation'> {
  return {
    async answerInvitation(itemUid, response) {
      const events = service.registry.get('calendar-events');
      let eventUid = itemUid;
      if (!(await ctx.store.repo(events.model).get(itemUid))) {
        const msg = (await service.load(ctx, service.registry.get('messages'), itemUid, 'read')) as unknown as MessageRecord;
        const uid = calendarPartsOf(await parseMail(await loadRaw(ctx, msg.blobId)))
          .map(icalUidOf)
          .find(Boolean);
        const [ev] = uid ? await service.list(ctx, events, { mailboxUid: msg.mailboxUid, icalUid: uid, limit: '1' }) : [];
        if (!ev) throw notFound('No calendar event for this invitation');
        eventUid = String(ev.uid);
      }
      const outbound = recordingOutbound(ctx, mailPort(ctx));
      const ev = await respondToInvitation(ctx, service, outbound, eventUid, { response });
      return { eventUid: String(ev.uid) };
    },
  };
}
