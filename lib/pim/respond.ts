import { randomUUID } from 'node:crypto';
import MimeNode from 'nodemailer/lib/mime-node/index.js';
import { z } from 'zod';
import { ApiError } from '../errors/index.js';
import type { OutboundHook } from '../mail/index.js';
import { MailboxModel, type Mailbox } from '../mail/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { replyIcs, type EventData } from './ics.js';

// The attendee's answer to a meeting invitation (Spec: Meeting invitations — the user's response
// sends a REPLY through the outbound path): the event's own PARTSTAT changes, and an iTIP REPLY
// (RFC 5546 3.2.3; iMIP, RFC 6047) goes to the organizer as a service-originated hand-off.

export const respondBody = z
  .object({
    response: z.enum(['accepted', 'tentative', 'declined']),
    /** Sent to the organizer as the REPLY's COMMENT and in the text part. */
    comment: z.string().trim().max(2000).optional(),
  })
  .strict();
export type RespondInput = z.infer<typeof respondBody>;
export type Response = RespondInput['response'];

/** What the event shows after the answer: a declined meeting leaves the busy view, like Outlook and Thunderbird do. */
const STATUS_AFTER: Record<Response, EventData['status']> = { accepted: 'confirmed', tentative: 'tentative', declined: 'cancelled' };
const VERB: Record<Response, string> = { accepted: 'Accepted', tentative: 'Tentative', declined: 'Declined' };

type Attendee = EventData['attendees'][number];
const display = (p: { email: string; name?: string }) => (p.name ? `"${p.name.replace(/["\\\r\n]/g, ' ')}" <${p.email}>` : p.email);

/** multipart/alternative: a line for people, and text/calendar; method=REPLY for their calendar (RFC 6047 2.4). */
export async function replyMessage(ev: EventData, me: Attendee, comment: string | undefined): Promise<Buffer> {
  const verb = VERB[me.partstat as Response];
  const domain = me.email.slice(me.email.lastIndexOf('@') + 1) || 'localhost';
  const root = new MimeNode('multipart/alternative');
  root.setHeader({
    From: display(me),
    To: display(ev.organizer!),
    Subject: `${verb}: ${ev.summary || '(no title)'}`.replace(/[\r\n]+/g, ' ').slice(0, 900),
    'Message-ID': `<${randomUUID()}@${domain}>`,
    Date: new Date().toUTCString(),
  });
  const who = me.name || me.email;
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(
      `${who} has ${verb === 'Tentative' ? 'tentatively accepted' : verb.toLowerCase()} the invitation: ${ev.summary}\n${comment ? `\n${comment}\n` : ''}`,
    );
  root.createChild('text/calendar; charset=utf-8; method=REPLY').setContent(replyIcs(ev, me, comment));
  return root.build();
}

/**
 * Answers an invitation in a mailbox calendar. Mailbox-scoped like every calendar route: the caller
 * needs write on the event with trusted roles stripped (404 when invisible, 403 api-102 otherwise).
 */
export async function respondToInvitation(
  ctx: Ctx,
  service: ResourceService,
  outbound: OutboundHook,
  uid: string,
  input: RespondInput,
): Promise<Record<string, unknown>> {
  const decl = service.registry.get('calendar-events');
  const ev = (await service.load(ctx, decl, uid, 'write')) as unknown as EventData & { uid: string; version: number; mailboxUid: string };
  const box = await ctx.store.repo<Mailbox>(MailboxModel).get(ev.mailboxUid);
  const own = new Set([box?.address, ...(box?.aliases ?? [])].filter(Boolean));
  if (!ev.organizer) throw new ApiError('api-120', 'the event has no organizer to answer');
  if (own.has(ev.organizer.email)) throw new ApiError('api-120', 'this mailbox organizes the event');
  const me = ev.attendees.find((a) => own.has(a.email));
  if (!me) throw new ApiError('api-120', 'this mailbox is not an attendee of the event');
  if (ev.status === 'cancelled' && me.partstat !== 'declined') throw new ApiError('api-120', 'the organizer cancelled the event');
  const answered = { ...me, partstat: input.response };
  const attendees = ev.attendees.map((a) => (a.email === me.email ? answered : a));
  const updated = await service.update(ctx, decl, uid, { version: ev.version, attendees, status: STATUS_AFTER[input.response] });
  // Handed to the outbound path like the other mail the service writes for a user (relay job: DKIM
  // for the From domain, transport, retries); envelope and From are the attendee address.
  await outbound.send({
    kind: 'itip-reply',
    envelopeFrom: me.email,
    envelopeTo: [ev.organizer.email],
    raw: await replyMessage({ ...ev, attendees }, answered, input.comment),
  });
  return updated;
}
