import { createHash } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { icsToEvents, type EventData } from './ics.js';
import { CalendarEventModel, calendarEventFields } from './models.js';

// Spec: Per-mailbox delivery rules, step 6 — meeting invitation processing (iTIP, RFC 5546) for
// the recipient mailbox. The delivery rules call applyItip for each calendar part of delivered,
// non-junk mail. Every step is keyed by UID (+ RECURRENCE-ID) and SEQUENCE, so delivering the same
// message twice changes nothing the second time.

type Stored = Row<EventData & { mailboxUid: string }>;
type Parsed = ReturnType<typeof icsToEvents>['events'][number];

export interface InboundItip {
  mailboxUid: string;
  /** Every address the recipient mailbox answers to (primary, aliases, the envelope recipient). */
  addresses: string[];
  /** The From address of the message, bare and lower case. */
  from: string;
  /** Spec: Trusting sender verification — whether the From address is verified. */
  verified: boolean;
}

export interface ItipOutcome {
  method: string;
  icalUid: string | null;
  organizer: string | null;
  /** Whether the calendar was (or already was) brought up to the message. */
  applied: boolean;
  /** created, updated, unchanged, cancelled, reply-applied; or ignored/refused with the reason. */
  outcome: string;
  eventUids: string[];
}

const CALENDAR_TYPES = new Set(['text/calendar', 'application/ics']);

/** The distinct iCalendar texts of a message: text/calendar parts and .ics attachments (Google and Thunderbird send both, identical). */
export function calendarPartsOf(parsed: ParsedMail): string[] {
  const parts = (parsed.attachments ?? []).filter((a) => CALENDAR_TYPES.has(a.contentType) || /\.ics$/i.test(a.filename ?? ''));
  const texts = parts.map((a) => {
    const charset = String((a.headers.get('content-type') as { params?: Record<string, string> } | undefined)?.params?.charset ?? 'utf-8');
    try {
      return new TextDecoder(charset).decode(a.content);
    } catch {
      return a.content.toString('utf8');
    }
  });
  return [...new Set(texts.map((t) => t.replace(/\r?\n/g, '\r\n').trim()))];
}

const eventSchema = z.object(calendarEventFields);
const validEmail = (e: string) => z.email().safeParse(e).success;
const clip = (s: string | undefined, n: number) => (s ?? '').slice(0, n);

/** The stored shape of a received (or imported) event, or null when it cannot be stored. */
export function eventRecordOf(mailboxUid: string, ev: Parsed): (z.infer<typeof eventSchema> & { icalUid: string }) | null {
  const person = (p: { email: string; name?: string }) => ({ email: p.email, ...(p.name ? { name: clip(p.name, 200) } : {}) });
  const r = eventSchema.safeParse({
    ...ev,
    mailboxUid,
    summary: clip(ev.summary, 500),
    description: clip(ev.description, 20_000),
    location: clip(ev.location, 500),
    end: ev.end < ev.start ? ev.start : ev.end,
    exdates: ev.exdates.slice(0, 1000),
    organizer: ev.organizer && validEmail(ev.organizer.email) ? person(ev.organizer) : null,
    attendees: ev.attendees
      .filter((a) => validEmail(a.email))
      .slice(0, 500)
      .map((a) => ({ ...a, ...person(a) })),
    reminders: ev.reminders.filter((x) => x.minutesBefore >= 0 && x.minutesBefore <= 40_320).slice(0, 20),
  });
  return r.success && r.data.icalUid ? (r.data as z.infer<typeof eventSchema> & { icalUid: string }) : null;
}

const ridOf = (d: Date | string | null) => (d ? new Date(d).getTime() : null);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
/** Created records get a uid derived from mailbox, UID and RECURRENCE-ID: a concurrent second delivery conflicts instead of duplicating. */
const derivedUid = (mailboxUid: string, icalUid: string, rid: number | null) =>
  createHash('sha256')
    .update(`${mailboxUid}\0${icalUid}\0${rid ?? ''}`)
    .digest('hex');

type ItipDeps = Pick<Deps, 'store' | 'events'>;

function publish(deps: ItipDeps, action: 'create' | 'update', rec: Stored): void {
  deps.events.publish([rec.uid, rec.mailboxUid], { type: 'calendarEvent', action, data: { ...rec } });
}

async function patchEvent(deps: ItipDeps, cur: Stored, patch: Partial<EventData>): Promise<boolean> {
  if (Object.entries(patch).every(([k, v]) => same(v, (cur as unknown as Record<string, unknown>)[k]))) return false;
  publish(deps, 'update', await deps.store.repo<EventData & { mailboxUid: string }>(CalendarEventModel).update(cur.uid, patch));
  return true;
}

/** REQUEST: a new event is tentative; a newer SEQUENCE replaces it (and asks again); the same SEQUENCE keeps the recipient's own answer. */
async function request(
  deps: ItipDeps,
  msg: InboundItip,
  own: Set<string>,
  events: Parsed[],
  existing: Stored[],
): Promise<Pick<ItipOutcome, 'applied' | 'outcome' | 'eventUids'>> {
  const counts = { created: 0, updated: 0, unchanged: 0, stale: 0, invalid: 0 };
  const uids: string[] = [];
  const repo = deps.store.repo<EventData & { mailboxUid: string }>(CalendarEventModel);
  for (const ev of events) {
    const data = eventRecordOf(msg.mailboxUid, ev);
    if (!data) {
      counts.invalid++;
      continue;
    }
    const cur = existing.find((r) => ridOf(r.recurrenceId) === ridOf(data.recurrenceId));
    if (!cur) {
      const uid = derivedUid(msg.mailboxUid, data.icalUid, ridOf(data.recurrenceId));
      try {
        publish(deps, 'create', await repo.create({ ...data, uid, status: 'tentative' }));
        counts.created++;
      } catch (e) {
        if (!(isApiError(e) && e.code === 'api-112')) throw e;
        counts.unchanged++; // the same invitation, delivered concurrently
      }
      uids.push(uid);
      continue;
    }
    uids.push(cur.uid);
    if (data.sequence < cur.sequence) {
      counts.stale++;
      continue;
    }
    const newer = data.sequence > cur.sequence;
    const mine = cur.attendees.find((a) => own.has(a.email));
    const attendees = data.attendees.map((a) => (!newer && mine && a.email === mine.email ? { ...a, partstat: mine.partstat } : a));
    const { summary, description, location, start, end, allDay, timeZone, rrule, exdates, organizer, sequence } = data;
    const changed = await patchEvent(deps, cur, {
      summary,
      description,
      location,
      start,
      end,
      allDay,
      timeZone,
      rrule,
      exdates,
      organizer,
      attendees,
      sequence,
      ...(newer ? { status: 'tentative' as const } : {}),
    });
    counts[changed ? 'updated' : 'unchanged']++;
  }
  const done = counts.created + counts.updated + counts.unchanged;
  const outcome = counts.created
    ? 'created'
    : counts.updated
      ? 'updated'
      : counts.unchanged
        ? 'unchanged'
        : counts.stale
          ? 'ignored: an older SEQUENCE than the calendar holds'
          : 'refused: the event cannot be stored (invalid fields)';
  return { applied: done > 0, outcome, eventUids: uids };
}

/** CANCEL: the whole event (every record of the UID), or one occurrence (EXDATE on the series, its exception cancelled). */
async function cancel(
  deps: ItipDeps,
  events: Parsed[],
  existing: Stored[],
): Promise<Pick<ItipOutcome, 'applied' | 'outcome' | 'eventUids'>> {
  const uids = new Set<string>();
  for (const ev of events) {
    const rid = ridOf(ev.recurrenceId);
    const targets = rid === null ? existing : existing.filter((r) => ridOf(r.recurrenceId) === rid);
    for (const cur of targets) {
      if (ev.sequence < cur.sequence) continue;
      await patchEvent(deps, cur, { status: 'cancelled', sequence: Math.max(cur.sequence, ev.sequence) });
      uids.add(cur.uid);
    }
    const master = existing.find((r) => r.recurrenceId === null && r.rrule);
    if (rid !== null && master) {
      const exdates = master.exdates.map((d) => new Date(d));
      if (!exdates.some((d) => d.getTime() === rid)) await patchEvent(deps, master, { exdates: [...exdates, new Date(rid)] });
      uids.add(master.uid);
    }
  }
  return uids.size
    ? { applied: true, outcome: 'cancelled', eventUids: [...uids] }
    : { applied: false, outcome: 'ignored: no such event in the calendar', eventUids: [] };
}

/** REPLY: the answering attendee's PARTSTAT on the organizer's event, only when the message comes from that attendee. */
async function reply(
  deps: ItipDeps,
  msg: InboundItip,
  own: Set<string>,
  events: Parsed[],
  existing: Stored[],
): Promise<Pick<ItipOutcome, 'applied' | 'outcome' | 'eventUids'>> {
  const uids: string[] = [];
  for (const ev of events) {
    const answer = ev.attendees.find((a) => a.email === msg.from);
    if (!answer) return { applied: false, outcome: 'refused: the REPLY does not come from the attendee it answers for', eventUids: [] };
    const cur = existing.find((r) => ridOf(r.recurrenceId) === ridOf(ev.recurrenceId));
    if (!cur) return { applied: false, outcome: 'ignored: no such event in the calendar', eventUids: [] };
    if (cur.organizer && !own.has(cur.organizer.email))
      return { applied: false, outcome: 'refused: this mailbox does not organize the event', eventUids: [] };
    if (ev.sequence < cur.sequence) return { applied: false, outcome: 'ignored: the REPLY answers an older SEQUENCE', eventUids: [] };
    if (!cur.attendees.some((a) => a.email === answer.email))
      return { applied: false, outcome: 'ignored: the sender is not an attendee of the event', eventUids: [] };
    await patchEvent(deps, cur, {
      attendees: cur.attendees.map((a) => (a.email === answer.email ? { ...a, partstat: answer.partstat } : a)),
    });
    uids.push(cur.uid);
  }
  return { applied: true, outcome: 'reply-applied', eventUids: uids };
}

/** Applies one iCalendar text of a delivered message to the recipient mailbox's calendar. */
export async function applyItip(deps: ItipDeps, msg: InboundItip, text: string): Promise<ItipOutcome> {
  let parsed: ReturnType<typeof icsToEvents>;
  try {
    parsed = icsToEvents(text);
  } catch {
    return { method: 'unknown', icalUid: null, organizer: null, applied: false, outcome: 'refused: not valid iCalendar', eventUids: [] };
  }
  const method = (parsed.method ?? 'PUBLISH').toUpperCase();
  const events = parsed.events;
  const first = events[0];
  const organizer = first?.organizer?.email ?? null;
  const base = { method, icalUid: first?.icalUid ?? null, organizer };
  const no = (outcome: string): ItipOutcome => ({ ...base, applied: false, outcome, eventUids: [] });
  if (!['REQUEST', 'CANCEL', 'REPLY'].includes(method)) return no(`ignored: METHOD ${method} is not processed`);
  if (!first?.icalUid || events.some((e) => e.icalUid !== first.icalUid))
    return no('refused: an iTIP message carries exactly one UID (RFC 5546 2.1.5)');
  const own = new Set(msg.addresses.map((a) => a.toLowerCase()));
  if (method !== 'REPLY') {
    if (!organizer || events.some((e) => e.organizer?.email !== organizer)) return no('refused: no single ORGANIZER');
    if (own.has(organizer)) return no('ignored: this mailbox organizes the event');
    // Spec: Trusting sender verification — a forwarded invitation (From is not the ORGANIZER) needs a verified sender.
    if (msg.from !== organizer && !msg.verified) return no('refused: a forwarded invitation from an unverified sender');
  }
  const existing = await deps.store
    .repo<EventData & { mailboxUid: string }>(CalendarEventModel)
    .list({ filter: { mailboxUid: msg.mailboxUid, icalUid: first.icalUid }, limit: 1000 });
  const done =
    method === 'REQUEST'
      ? await request(deps, msg, own, events, existing)
      : method === 'CANCEL'
        ? await cancel(deps, events, existing)
        : await reply(deps, msg, own, events, existing);
  return { ...base, ...done };
}
