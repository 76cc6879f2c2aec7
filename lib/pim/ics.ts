import ICAL from 'ical.js';
import { tzlib_get_ical_block as vtimezoneBlock, tzlib_get_timezones as vtimezoneNames } from 'timezones-ical-library';
import { findIana } from 'windows-iana';
import { invalid, isApiError } from '../errors/index.js';
import { PRODUCT } from '../version.js';
import { instantOf, wallOf } from './zones.js';

/** A calendar event as the store holds it (dates may come back from JSON columns as strings). */
export interface EventData {
  icalUid?: string | null;
  summary: string;
  description: string;
  location: string;
  start: Date;
  end: Date;
  allDay: boolean;
  timeZone: string;
  rrule: string | null;
  exdates: Array<Date | string>;
  recurrenceId: Date | string | null;
  status: 'tentative' | 'confirmed' | 'cancelled';
  organizer: { email: string; name?: string } | null;
  attendees: Array<{ email: string; name?: string; role: string; partstat: string }>;
  reminders: Array<{ minutesBefore: number }>;
  sequence: number;
}

const asDate = (d: Date | string) => (d instanceof Date ? d : new Date(d));

function timeProp(comp: ICAL.Component, name: string, d: Date, ev: Pick<EventData, 'allDay' | 'timeZone'>): void {
  const prop = new ICAL.Property(name, comp);
  if (ev.allDay) {
    const w = wallOf(d, 'UTC');
    prop.resetType('date');
    prop.setValue(ICAL.Time.fromData({ year: w.year, month: w.month, day: w.day, isDate: true }));
  } else if (ev.timeZone === 'UTC') {
    prop.setValue(ICAL.Time.fromJSDate(d, true));
  } else {
    // TZID with the IANA name and the wall time there; calendarOf adds its VTIMEZONE (RFC 5545 3.2.19).
    prop.setParameter('tzid', ev.timeZone);
    prop.setValue(ICAL.Time.fromData({ ...wallOf(d, ev.timeZone), isDate: false }));
  }
  comp.addProperty(prop);
}

let knownZones: Set<string> | null = null;

/** The VTIMEZONE of an IANA zone (current rules, from timezones-ical-library), or null if it has none. */
function vtimezoneOf(tz: string): ICAL.Component | null {
  knownZones ??= new Set(vtimezoneNames() as string[]);
  if (!knownZones.has(tz)) return null;
  const [block] = vtimezoneBlock(tz) as string[];
  return block ? new ICAL.Component(ICAL.parse(block)) : null;
}

/**
 * A VCALENDAR with a VTIMEZONE for every zone its events use (RFC 5545 3.2.19: each TZID needs
 * one). An event in a zone without a known definition is written in UTC instead.
 */
function calendarOf(events: EventData[], opts: { method?: string; name?: string }): { cal: ICAL.Component; events: EventData[] } {
  const cal = new ICAL.Component(['vcalendar', [], []]);
  cal.addPropertyWithValue('prodid', `-//svcmail//${PRODUCT.version}//EN`);
  cal.addPropertyWithValue('version', '2.0');
  cal.addPropertyWithValue('calscale', 'GREGORIAN');
  if (opts.method) cal.addPropertyWithValue('method', opts.method);
  if (opts.name) cal.addPropertyWithValue('x-wr-calname', opts.name);
  const zones = new Map<string, ICAL.Component | null>();
  for (const ev of events)
    if (!ev.allDay && ev.timeZone !== 'UTC' && !zones.has(ev.timeZone)) zones.set(ev.timeZone, vtimezoneOf(ev.timeZone));
  for (const vtz of zones.values()) if (vtz) cal.addSubcomponent(vtz);
  return {
    cal,
    events: events.map((ev) => (ev.allDay || ev.timeZone === 'UTC' || zones.get(ev.timeZone) ? ev : { ...ev, timeZone: 'UTC' })),
  };
}

function veventOf(ev: EventData): ICAL.Component {
  const v = new ICAL.Component('vevent');
  v.addPropertyWithValue('uid', ev.icalUid ?? '');
  v.addPropertyWithValue('dtstamp', ICAL.Time.fromJSDate(new Date(), true));
  timeProp(v, 'dtstart', asDate(ev.start), ev);
  timeProp(v, 'dtend', asDate(ev.end), ev);
  if (ev.recurrenceId) timeProp(v, 'recurrence-id', asDate(ev.recurrenceId), ev);
  v.addPropertyWithValue('summary', ev.summary);
  if (ev.description) v.addPropertyWithValue('description', ev.description);
  if (ev.location) v.addPropertyWithValue('location', ev.location);
  v.addPropertyWithValue('sequence', ev.sequence);
  if (ev.organizer) {
    const p = v.addPropertyWithValue('organizer', `mailto:${ev.organizer.email}`);
    if (ev.organizer.name) p.setParameter('cn', ev.organizer.name);
  }
  return v;
}

function attendeeProp(v: ICAL.Component, a: EventData['attendees'][number]): ICAL.Property {
  const p = v.addPropertyWithValue('attendee', `mailto:${a.email}`);
  if (a.name) p.setParameter('cn', a.name);
  p.setParameter('role', a.role.toUpperCase());
  p.setParameter('partstat', a.partstat.toUpperCase());
  return p;
}

export function eventsToIcs(events: EventData[], calendarName?: string): string {
  const { cal, events: list } = calendarOf(events, { name: calendarName });
  for (const ev of list) {
    const v = veventOf(ev);
    v.addPropertyWithValue('status', ev.status.toUpperCase());
    if (ev.rrule) v.addPropertyWithValue('rrule', ICAL.Recur.fromString(ev.rrule));
    for (const ex of ev.exdates) timeProp(v, 'exdate', asDate(ex), ev);
    for (const a of ev.attendees) attendeeProp(v, a);
    for (const r of ev.reminders) {
      const alarm = new ICAL.Component('valarm');
      alarm.addPropertyWithValue('action', 'DISPLAY');
      alarm.addPropertyWithValue('description', ev.summary || 'Reminder');
      alarm.addPropertyWithValue('trigger', ICAL.Duration.fromSeconds(-60 * r.minutesBefore));
      v.addSubcomponent(alarm);
    }
    cal.addSubcomponent(v);
  }
  return cal.toString();
}

/**
 * An iTIP REPLY (RFC 5546 3.2.3): the organizer's UID, SEQUENCE and RECURRENCE-ID, and only the
 * answering attendee with its new PARTSTAT.
 */
export function replyIcs(ev: EventData, attendee: EventData['attendees'][number], comment?: string): string {
  const {
    cal,
    events: [e],
  } = calendarOf([ev], { method: 'REPLY' });
  const v = veventOf(e);
  attendeeProp(v, attendee);
  if (comment) v.addPropertyWithValue('comment', comment);
  cal.addSubcomponent(v);
  return cal.toString();
}

/**
 * The IANA zone a TZID names: an IANA name itself, a Windows zone name as Outlook and Exchange
 * write them ("W. Europe Standard Time", mapped with CLDR's windowsZones table through
 * windows-iana), or an IANA name behind a path prefix (old Lightning: "/mozilla.org/20050126_1/Europe/Berlin").
 */
export function ianaZoneOf(tzid: string): string | null {
  if (isIana(tzid)) return tzid;
  const fromWindows = findIana(tzid.trim())[0];
  if (fromWindows && isIana(fromWindows)) return fromWindows;
  const tail = /([A-Za-z]+\/[A-Za-z_+-]+(?:\/[A-Za-z_+-]+)?)$/.exec(tzid)?.[1];
  return tail && tzid.startsWith('/') && isIana(tail) ? tail : null;
}

/**
 * An iCalendar time as an instant and the zone it was planned in. A TZID that names an IANA zone
 * (directly or as a Windows name) is read on that zone's wall clock, so recurrences keep their local
 * time across DST; any other TZID falls back to its VTIMEZONE for the instant.
 */
function timeToInstant(t: ICAL.Time, tzid: string | undefined, fallbackTz: string): { at: Date; allDay: boolean; tz: string } {
  if (t.isDate) return { at: new Date(Date.UTC(t.year, t.month - 1, t.day)), allDay: true, tz: 'UTC' };
  if (!tzid && t.zone === ICAL.Timezone.utcTimezone) return { at: t.toJSDate(), allDay: false, tz: 'UTC' };
  const iana = tzid ? ianaZoneOf(tzid) : null;
  if (tzid && !iana && t.zone && t.zone.tzid === tzid) return { at: t.toJSDate(), allDay: false, tz: fallbackTz }; // the message's own VTIMEZONE
  const tz = iana ?? fallbackTz;
  return {
    at: instantOf({ year: t.year, month: t.month, day: t.day, hour: t.hour, minute: t.minute, second: t.second }, tz),
    allDay: false,
    tz,
  };
}

const instant = (prop: ICAL.Property, fallbackTz: string) =>
  timeToInstant(prop.getFirstValue() as ICAL.Time, prop.getParameter('tzid') as string | undefined, fallbackTz);

function isIana(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const mailto = (v: unknown) =>
  String(v ?? '')
    .replace(/^mailto:/i, '')
    .trim()
    .toLowerCase();
const PARTSTATS = new Set(['needs-action', 'accepted', 'declined', 'tentative', 'delegated']);
const ROLES = new Set(['chair', 'req-participant', 'opt-participant', 'non-participant']);

/** Parses iCalendar text into event inputs (one per VEVENT, exceptions included); method and errors per event. */
export function icsToEvents(text: string): { method: string | null; events: Array<Omit<EventData, 'sequence'> & { sequence: number }> } {
  let cal: ICAL.Component;
  try {
    cal = new ICAL.Component(ICAL.parse(text));
  } catch (e) {
    throw invalid(`not valid iCalendar: ${(e as Error).message}`);
  }
  if (cal.name !== 'vcalendar') throw invalid('not valid iCalendar: no VCALENDAR');
  // ical.js reads values lazily: a malformed DTSTART or RRULE throws only when read below, and is
  // the sender's mistake (api-106), not a 500 (found by test/fuzz/targets/ics.ts).
  try {
    return eventsOf(cal);
  } catch (e) {
    if (isApiError(e)) throw e;
    throw invalid(`not valid iCalendar: ${(e as Error).message}`);
  }
}

function eventsOf(cal: ICAL.Component): ReturnType<typeof icsToEvents> {
  // ical.js expands a VTIMEZONE's observance rule up to the year it converts: a MINUTELY rule (or one
  // that never matches) in a zone an event uses would hang the importer — and the worker, on an
  // invitation in mail (found by test/fuzz/targets/ics.ts). Published zones repeat yearly.
  for (const obs of cal.getAllSubcomponents('vtimezone').flatMap((z) => z.getAllSubcomponents())) {
    for (const p of obs.getAllProperties('rrule')) {
      const r = p.getFirstValue() as ICAL.Recur;
      if (r.freq !== 'YEARLY') throw invalid('not valid iCalendar: a VTIMEZONE observance must repeat yearly (FREQ=YEARLY)');
      const problem = rruleProblem(r.toString());
      if (problem) throw invalid(`not valid iCalendar: VTIMEZONE RRULE ${problem}`);
    }
  }
  // VTIMEZONEs resolve through the parsed VCALENDAR itself (ical.js looks TZIDs up in the root
  // component), never through the process-wide registry one sender's message could poison.
  const events = cal.getAllSubcomponents('vevent').map((v) => {
    const dtstart = v.getFirstProperty('dtstart');
    if (!dtstart) throw invalid('a VEVENT has no DTSTART');
    const start = instant(dtstart, 'UTC');
    const dtend = v.getFirstProperty('dtend');
    const duration = v.getFirstPropertyValue('duration') as ICAL.Duration | null;
    const end = dtend
      ? instant(dtend, start.tz).at
      : new Date(start.at.getTime() + (duration ? duration.toSeconds() * 1000 : start.allDay ? 86_400_000 : 0));
    const rrule = v.getFirstPropertyValue('rrule') as ICAL.Recur | null;
    // What occurrences() reads back must expand, or every calendar view of the stored event fails.
    const problem = rrule ? rruleProblem(rrule.toString()) : null;
    if (problem) throw invalid(`not valid iCalendar: RRULE ${problem}`);
    const rid = v.getFirstProperty('recurrence-id');
    const org = v.getFirstProperty('organizer');
    const status = String(v.getFirstPropertyValue('status') ?? 'CONFIRMED').toLowerCase();
    return {
      icalUid: String(v.getFirstPropertyValue('uid') ?? '') || undefined,
      summary: String(v.getFirstPropertyValue('summary') ?? ''),
      description: String(v.getFirstPropertyValue('description') ?? ''),
      location: String(v.getFirstPropertyValue('location') ?? ''),
      start: start.at,
      end,
      allDay: start.allDay,
      timeZone: start.tz,
      rrule: rrule ? rrule.toString() : null,
      exdates: v
        .getAllProperties('exdate')
        .flatMap((p) => p.getValues().map((x) => timeToInstant(x as ICAL.Time, p.getParameter('tzid') as string | undefined, start.tz).at)),
      recurrenceId: rid ? instant(rid, start.tz).at : null,
      status: (['tentative', 'confirmed', 'cancelled'].includes(status) ? status : 'confirmed') as EventData['status'],
      organizer: org
        ? { email: mailto(org.getFirstValue()), ...(org.getParameter('cn') ? { name: String(org.getParameter('cn')) } : {}) }
        : null,
      attendees: v.getAllProperties('attendee').map((a) => {
        const role = String(a.getParameter('role') ?? 'REQ-PARTICIPANT').toLowerCase();
        const partstat = String(a.getParameter('partstat') ?? 'NEEDS-ACTION').toLowerCase();
        return {
          email: mailto(a.getFirstValue()),
          ...(a.getParameter('cn') ? { name: String(a.getParameter('cn')) } : {}),
          role: ROLES.has(role) ? role : 'req-participant',
          partstat: PARTSTATS.has(partstat) ? partstat : 'needs-action',
        };
      }),
      reminders: v
        .getAllSubcomponents('valarm')
        .map((al) => al.getFirstPropertyValue('trigger'))
        .filter((t): t is ICAL.Duration => t instanceof ICAL.Duration && t.isNegative)
        .map((t) => ({ minutesBefore: Math.round(t.toSeconds() / -60) })),
      sequence: Number(v.getFirstPropertyValue('sequence') ?? 0) || 0,
    };
  });
  return { method: (cal.getFirstPropertyValue('method') as string | null) ?? null, events };
}

export interface Occurrence {
  start: Date;
  end: Date;
  /** The exception record that replaces this occurrence, if any. */
  overriddenBy?: string;
}

/**
 * Occurrences of a (possibly recurring) event between from and to. The rule runs on the wall clock of
 * the event's zone, so a 09:00 weekly meeting stays at 09:00 across daylight-saving changes.
 */
export function occurrences(
  ev: Pick<EventData, 'start' | 'end' | 'rrule' | 'exdates' | 'timeZone' | 'allDay'>,
  from: Date,
  to: Date,
  max = 5000,
): Occurrence[] {
  const start = asDate(ev.start);
  const length = asDate(ev.end).getTime() - start.getTime();
  if (!ev.rrule) return start < to && start.getTime() + length > from.getTime() ? [{ start, end: new Date(start.getTime() + length) }] : [];
  const tz = ev.allDay ? 'UTC' : ev.timeZone;
  const w = wallOf(start, tz);
  const dtstart = ICAL.Time.fromData({ ...w, isDate: false });
  const rule = ICAL.Recur.fromString(ev.rrule);
  // A UTC UNTIL (RFC 5545 3.3.10; Outlook writes them) compares with the floating wall-clock start
  // only once it is itself a wall time in the zone, or the last occurrence goes missing.
  if (rule.until && !rule.until.isDate && rule.until.zone === ICAL.Timezone.utcTimezone)
    rule.until = ICAL.Time.fromData({ ...wallOf(rule.until.toJSDate(), tz), isDate: false });
  let it: ICAL.RecurIterator;
  try {
    it = boundedIterator(rule, dtstart, EXPANSION_MS);
  } catch {
    // A rule stored before it was checked (rruleProblem) and that ical.js refuses: its first occurrence only.
    return start < to && start.getTime() + length > from.getTime() ? [{ start, end: new Date(start.getTime() + length) }] : [];
  }
  const excluded = new Set(ev.exdates.map((d) => asDate(d).getTime()));
  const out: Occurrence[] = [];
  try {
    for (let next = it.next(), n = 0; next && n < 100_000; next = it.next(), n++) {
      const at = instantOf(
        { year: next.year, month: next.month, day: next.day, hour: next.hour, minute: next.minute, second: next.second },
        tz,
      );
      if (at >= to) break;
      if (at.getTime() + length <= from.getTime() || excluded.has(at.getTime())) continue;
      out.push({ start: at, end: new Date(at.getTime() + length) });
      if (out.length >= max) break;
    }
  } catch (e) {
    if (!(e instanceof ExpansionBudget)) throw e;
  }
  return out;
}

/**
 * How long one event's expansion may search. ical.js's next() searches without end for a rule whose
 * BY parts never match (FREQ=DAILY;BYMONTH=2;BYMONTHDAY=31, FREQ=WEEKLY;BYWEEKNO=20): one such event
 * would hang the daemon (found by test/fuzz/targets/ics.ts). The expansion stops with what it found.
 */
const EXPANSION_MS = 200;

class ExpansionBudget extends Error {}

/** Every step by which ical.js's iterator advances a candidate: the places to bound its search. */
const STEPS = [
  'check_contracting_rules',
  'expand_year_days',
  'increment_year',
  'increment_month',
  'increment_monthday',
  'increment_hour',
  'increment_minute',
  'increment_second',
];

/**
 * The largest INTERVAL expanded. RFC 5545 sets none, but ical.js advances a DAILY or WEEKLY rule one
 * day at a time inside one step, where the search budget cannot stop it: INTERVAL=45566778899 (found
 * by test/fuzz/targets/ics.ts) would take hours. No calendar needs a rule beyond this.
 */
const MAX_INTERVAL = 10_000;

function boundedIterator(rule: ICAL.Recur, dtstart: ICAL.Time, ms: number): ICAL.RecurIterator {
  if (rule.interval > MAX_INTERVAL) throw new ExpansionBudget(`INTERVAL above ${MAX_INTERVAL}`);
  // Built uninitialised: init() searches for the first occurrence too (for years, with a BYSETPOS
  // that cannot match), so it runs only once the steps are bounded.
  const it = new ICAL.RecurIterator({ rule, dtstart, initialized: true });
  const deadline = performance.now() + ms;
  const own = it as unknown as Record<string, (...a: unknown[]) => unknown>;
  for (const name of STEPS) {
    const step = own[name].bind(it);
    own[name] = (...a) => {
      if (performance.now() > deadline) throw new ExpansionBudget('recurrence search budget spent');
      return step(...a);
    };
  }
  try {
    (it as unknown as { init(): void }).init();
  } catch (e) {
    // What ical.js does in its constructor: a rule with no possible occurrence is an empty iterator.
    if (!(e instanceof Error) || e.message !== 'Recurrence rule has no valid occurrences') throw e;
    it.completed = true;
  }
  return it;
}

/**
 * Why an RRULE value cannot be stored, or null: it must parse, have a FREQ, be accepted by ical.js's
 * iterator (RFC 5545 3.3.10 forbids e.g. BYMONTHDAY with WEEKLY) and find its next occurrences in
 * bounded time. Used by the import (icsToEvents) and by the calendar-event model.
 */
export function rruleProblem(text: string): string | null {
  let rule: ICAL.Recur;
  try {
    rule = ICAL.Recur.fromString(text);
  } catch (e) {
    return (e as Error).message;
  }
  if (!rule.freq || !/FREQ=/i.test(text)) return 'has no FREQ';
  if (rule.interval > MAX_INTERVAL) return `has an INTERVAL above ${MAX_INTERVAL}`;
  try {
    const it = boundedIterator(
      rule,
      ICAL.Time.fromData({ year: 2001, month: 1, day: 1, hour: 9, minute: 0, second: 0, isDate: false }),
      100,
    );
    for (let i = 0; i < 3 && it.next(); i++);
  } catch (e) {
    return e instanceof ExpansionBudget
      ? 'never finds its next occurrence in bounded time (BY parts that cannot match)'
      : (e as Error).message;
  }
  return null;
}
