import type { Row } from '../api.js';
import { atLeast, kid, kids, textOf } from './protocol.js';
import { overrideExceptions } from './calendar-overrides.js';
import { bodyText, compact, parseDate, textBody } from './sync-pim.js';
import { sinceOf, type ItemContext } from './sync-source.js';
import { dayIn, readZoneInformation, zoneInformation, zoneOf } from './timezone.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// A calendar event as a device holds it (MS-ASCAL) and back. Times are UTC instants both ways; a
// timed event's Timezone is the zone it was planned in (timezone.ts), so the device expands a
// recurrence on that zone's clock, and a device's Timezone sets the zone of what it adds or changes.
// An all-day event is a day: the UTC zone and midnight UTC out, the device's local day in. Location is calendar:Location up to 14.1 and
// airsyncbase:Location (its DisplayName) from 16.0. Recurrence maps the common rules both ways —
// daily, weekly on days, monthly on a day or an nth weekday, yearly on a date or an nth weekday,
// with INTERVAL, COUNT and UNTIL; any other rule is not sent (the device shows one occurrence)
// and a device's change without Recurrence keeps it. Excluded occurrences (exdates) are deleted
// Exceptions (ExceptionStartTime up to 14.1, airsyncbase:InstanceId from 16.0); modified
// occurrences are Exceptions of their series too (calendar-overrides.ts).

const ca = ns('Calendar');
const asb = ns('AirSyncBase');

/** TIME_ZONE_INFORMATION (172 bytes) of UTC: bias 0, no daylight time. */
const UTC_ZONE = Buffer.alloc(172).toString('base64');

const DAYS = ['SU', 'MO', 'TU', 'WE', 'TH', 'FR', 'SA'];
const STATUS_OUT: Record<string, number> = { accepted: 3, declined: 4, tentative: 2, 'needs-action': 5, delegated: 0 };
const STATUS_IN: Record<string, string> = { '2': 'tentative', '3': 'accepted', '4': 'declined' };
const TYPE_OUT: Record<string, number> = { 'opt-participant': 2, 'non-participant': 2 };
const TYPE_IN: Record<string, string> = { '2': 'opt-participant', '3': 'non-participant' };
const CANCELLED = new Set(['5', '7', '13', '15']);

interface Person {
  email: string;
  name?: string;
  role?: string;
  partstat?: string;
}

const ruleOf = (rrule: string) =>
  Object.fromEntries(rrule.split(';').flatMap((p) => (p.includes('=') ? [p.split('=', 2).map((s) => s.trim().toUpperCase())] : [])));

/** An RRULE UNTIL (date or date-time) → a Date. */
const untilOf = (v: string) => parseDate(/^\d{8}$/.test(v) ? `${v}T000000Z` : /^\d{8}T\d{6}$/.test(v) ? `${v}Z` : v);

interface RuleShape {
  /** DayOfWeek bits of BYDAY (0: none). */
  mask: number;
  /** WeekOfMonth of an nth weekday (1–4, 5 for the last; 0: none or mixed). */
  week: number;
  dom: number | undefined;
  month: number | undefined;
  setpos: boolean;
}

/** BYDAY, BYMONTHDAY and BYMONTH of a rule; null when EAS cannot hold them (several month days, odd values). */
function shapeOf(r: Record<string, string>): RuleShape | null {
  const byDay = r.BYDAY ? r.BYDAY.split(',').map((d) => /^([+-]?\d{1,2})?(SU|MO|TU|WE|TH|FR|SA)$/.exec(d)) : [];
  if (byDay.some((m) => !m)) return null;
  const ordinals = new Set(byDay.map((m) => Number(m![1] ?? r.BYSETPOS ?? 0)));
  const ordinal = ordinals.size === 1 ? [...ordinals][0] : 0;
  const single = (v: string | undefined, max: number) => (v && /^\d{1,2}$/.test(v) && +v >= 1 && +v <= max ? +v : v ? null : undefined);
  const dom = single(r.BYMONTHDAY, 31);
  const month = single(r.BYMONTH, 12);
  if (dom === null || month === null) return null;
  return {
    mask: byDay.reduce((a, m) => a | (1 << DAYS.indexOf(m![2])), 0),
    week: ordinal === -1 ? 5 : ordinal >= 1 && ordinal <= 4 ? ordinal : 0,
    dom,
    month,
    setpos: !!r.BYSETPOS,
  };
}

type Parts = Array<[string, number]> | null;
const PATTERNS: Record<string, (s: RuleShape, start: Date) => Parts> = {
  DAILY: (s) =>
    s.dom || s.month || s.setpos
      ? null
      : s.mask
        ? [
            ['Type', 1],
            ['DayOfWeek', s.mask],
          ]
        : [['Type', 0]],
  WEEKLY: (s, start) =>
    s.dom || s.month || s.setpos
      ? null
      : [
          ['Type', 1],
          ['DayOfWeek', s.mask || 1 << start.getUTCDay()],
        ],
  MONTHLY(s, start) {
    if (s.month) return null;
    if (s.mask)
      return s.week && !s.dom
        ? [
            ['Type', 3],
            ['WeekOfMonth', s.week],
            ['DayOfWeek', s.mask],
          ]
        : null;
    return [
      ['Type', 2],
      ['DayOfMonth', s.dom ?? start.getUTCDate()],
    ];
  },
  YEARLY(s, start) {
    const m: [string, number] = ['MonthOfYear', s.month ?? start.getUTCMonth() + 1];
    if (s.mask) return s.week && !s.dom ? [['Type', 6], ['WeekOfMonth', s.week], ['DayOfWeek', s.mask], m] : null;
    return [['Type', 5], ['DayOfMonth', s.dom ?? start.getUTCDate()], m];
  },
};

/** The parts of a Recurrence for a rule's frequency and BY… parts; null when EAS cannot say it. */
function pattern(r: Record<string, string>, start: Date): Parts {
  const shape = shapeOf(r);
  const of = PATTERNS[r.FREQ];
  return shape && of ? of(shape, start) : null;
}

const RULE_PARTS = new Set(['FREQ', 'INTERVAL', 'COUNT', 'UNTIL', 'BYDAY', 'BYMONTHDAY', 'BYMONTH', 'BYSETPOS', 'WKST']);

/** calendar:Recurrence of an RRULE, or null when the rule is beyond what EAS can say. */
export function recurrenceOut(rrule: string, start: Date): WbxmlElement | null {
  const r = ruleOf(rrule);
  if (Object.keys(r).some((k) => !RULE_PARTS.has(k))) return null;
  const parts = pattern(r, start);
  if (!parts) return null;
  const interval = Number(r.INTERVAL ?? 1);
  if (!Number.isInteger(interval) || interval < 1 || interval > 999) return null;
  const until = r.UNTIL ? untilOf(r.UNTIL) : undefined;
  if (r.UNTIL && !until) return null;
  return ca('Recurrence', [
    ...parts.map(([k, v]) => ca(k, v)),
    ca('Interval', interval),
    ...(r.COUNT ? [ca('Occurrences', Number(r.COUNT))] : []),
    ...(until ? [ca('Until', compact(until))] : []),
  ]);
}

/** The RRULE of a device's Recurrence (null when its Type is unknown). */
export function recurrenceIn(rec: WbxmlElement): string | null {
  const n = (tag: string) => (textOf(rec, tag) !== undefined ? Number(textOf(rec, tag)) : undefined);
  const mask = n('DayOfWeek') ?? 0;
  const days = DAYS.filter((_, i) => mask & (1 << i));
  const week = n('WeekOfMonth') === 5 ? -1 : (n('WeekOfMonth') ?? 0);
  const nth = days.length === 1 ? `BYDAY=${week}${days[0]}` : `BYDAY=${days.join(',')};BYSETPOS=${week}`;
  const byDay = days.length ? [`BYDAY=${days.join(',')}`] : [];
  const dom = n('DayOfMonth') ? [`BYMONTHDAY=${n('DayOfMonth')}`] : [];
  const moy = n('MonthOfYear') ? [`BYMONTH=${n('MonthOfYear')}`] : [];
  const byType: Record<number, string[] | null> = {
    0: days.length ? ['FREQ=WEEKLY', ...byDay] : ['FREQ=DAILY'],
    1: ['FREQ=WEEKLY', ...byDay],
    2: ['FREQ=MONTHLY', ...dom],
    3: days.length && week ? ['FREQ=MONTHLY', nth] : null,
    5: ['FREQ=YEARLY', ...moy, ...dom],
    6: days.length && week ? ['FREQ=YEARLY', ...moy, nth] : null,
  };
  const parts = byType[n('Type') ?? -1];
  if (!parts) return null;
  const interval = n('Interval') ?? 1;
  const until = parseDate(textOf(rec, 'Until'));
  if (interval > 1) parts.push(`INTERVAL=${interval}`);
  if (n('Occurrences')) parts.push(`COUNT=${n('Occurrences')}`);
  else if (until) parts.push(`UNTIL=${compact(until)}`);
  return parts.join(';');
}

const people = (v: unknown): Person[] => (Array.isArray(v) ? (v as Person[]) : []);

const attendeesOut = (attendees: Person[]): WbxmlElement[] =>
  attendees.length
    ? [
        ca(
          'Attendees',
          attendees.map((a) =>
            ca('Attendee', [
              ca('Email', a.email),
              ca('Name', a.name || a.email),
              ca('AttendeeStatus', STATUS_OUT[a.partstat ?? ''] ?? 0),
              ca('AttendeeType', TYPE_OUT[a.role ?? ''] ?? 1),
            ]),
          ),
        ),
      ]
    : [];

/** The recurrence, its deleted and its modified occurrences (none for a rule EAS cannot say). */
function recurrenceElements(row: Row, x: ItemContext, v16: boolean): WbxmlElement[] {
  const rec = typeof row.rrule === 'string' && row.rrule ? recurrenceOut(row.rrule, new Date(row.start as Date)) : null;
  if (!rec) return [];
  const exdates = Array.isArray(row.exdates) ? (row.exdates as unknown[]) : [];
  const exception = (d: unknown) =>
    ca('Exception', [ca('Deleted', '1'), v16 ? asb('InstanceId', compact(d)) : ca('ExceptionStartTime', compact(d))]);
  const exceptions = [...exdates.map(exception), ...overrideExceptions(row, x)];
  return [rec, ...(exceptions.length ? [ca('Exceptions', exceptions)] : [])];
}

/** MeetingStatus: 0 an appointment; 1/5 a meeting the mailbox organizes (cancelled); 3/7 one it was invited to. */
function meetingStatus(row: Row, ownAddress: string): number {
  if (!people(row.attendees).length) return 0;
  const organizer = row.organizer as Person | null;
  const mine = !organizer || organizer.email === ownAddress;
  if (row.status === 'cancelled') return mine ? 5 : 7;
  return mine ? 1 : 3;
}

/** The ApplicationData of an event for a device of `x.version`. */
export function eventData(row: Row, x: ItemContext, ownAddress: string): WbxmlElement[] {
  const v16 = atLeast(x.version, '16.0');
  const organizer = row.organizer as Person | null;
  const reminder = (Array.isArray(row.reminders) ? row.reminders[0] : undefined) as { minutesBefore?: number } | undefined;
  const location = String(row.location ?? '');
  const locationElement = v16 ? asb('Location', [asb('DisplayName', location)]) : ca('Location', location);
  return [
    ca('Timezone', row.allDay ? UTC_ZONE : zoneInformation(String(row.timeZone ?? 'UTC'), new Date(row.start as Date))),
    ca('DtStamp', compact(row.updatedAt ?? row.createdAt ?? new Date())),
    ca('StartTime', compact(row.start)),
    ca('Subject', String(row.summary ?? '')),
    ca('UID', String(row.icalUid ?? row.uid)),
    ...(organizer ? [ca('OrganizerName', organizer.name || organizer.email), ca('OrganizerEmail', organizer.email)] : []),
    ...attendeesOut(people(row.attendees)),
    ...(location ? [locationElement] : []),
    ca('EndTime', compact(row.end)),
    ...recurrenceElements(row, x, v16),
    textBody(String(row.description ?? ''), x.prefs),
    ca('Sensitivity', '0'),
    ca('BusyStatus', row.status === 'tentative' ? 1 : 2),
    ca('AllDayEvent', row.allDay ? '1' : '0'),
    ...(reminder?.minutesBefore !== undefined ? [ca('Reminder', reminder.minutesBefore)] : []),
    ca('MeetingStatus', meetingStatus(row, ownAddress)),
  ];
}

function attendeesIn(data: WbxmlElement | undefined): Person[] {
  return kids(kid(data, 'Attendees'), 'Attendee').flatMap((a) => {
    const email = (textOf(a, 'Email') ?? '').trim().toLowerCase();
    if (!/^[^\s@]+@[^\s@]+$/.test(email)) return [];
    const name = (textOf(a, 'Name') ?? '').trim();
    return [
      {
        email,
        ...(name && name.toLowerCase() !== email ? { name: name.slice(0, 200) } : {}),
        role: TYPE_IN[textOf(a, 'AttendeeType') ?? ''] ?? 'req-participant',
        partstat: STATUS_IN[textOf(a, 'AttendeeStatus') ?? ''] ?? 'needs-action',
      },
    ];
  });
}

/** Deleted occurrences of a device's Exceptions (undefined when it sent none: the server's stay). */
function exdatesIn(data: WbxmlElement | undefined): Date[] | undefined {
  const list = kid(data, 'Exceptions');
  if (!list) return undefined;
  return kids(list, 'Exception')
    .filter((e) => textOf(e, 'Deleted') === '1')
    .flatMap((e) => parseDate(textOf(e, 'ExceptionStartTime') ?? textOf(e, 'InstanceId')) ?? []);
}

/**
 * The status a device's event sets: cancelled by its MeetingStatus; tentative while it shows the
 * time as tentative (BusyStatus 1, as eventData sends a tentative event), confirmed again when it
 * shows it otherwise; unchanged when it says neither.
 */
function statusIn(meeting: string | undefined, busy: string | undefined, current: Row | null): Record<string, unknown> {
  if (meeting && CANCELLED.has(meeting)) return { status: 'cancelled' };
  if (busy === '1') return { status: 'tentative' };
  if (busy !== undefined && (current?.status ?? 'tentative') === 'tentative') return { status: 'confirmed' };
  return {};
}

/** What only a device's Add sets: the iCalendar UID (14.x) and the organizer. */
function createOnly(data: WbxmlElement | undefined): Record<string, unknown> {
  const uid = (textOf(data, 'UID') ?? '').trim();
  const email = (textOf(data, 'OrganizerEmail') ?? '').trim().toLowerCase();
  const name = (textOf(data, 'OrganizerName') ?? '').trim().slice(0, 200);
  return {
    ...(uid && uid.length <= 255 ? { icalUid: uid } : {}),
    ...(/^[^\s@]+@[^\s@]+$/.test(email) ? { organizer: { email, ...(name ? { name } : {}) } } : {}),
  };
}

/** The rule a device's change sets: its Recurrence, or the server's rule EAS cannot say (never sent, so never absent on purpose). */
function ruleIn(data: WbxmlElement | undefined, current: Row | null): string | null {
  const rec = kid(data, 'Recurrence');
  if (rec) return recurrenceIn(rec);
  const rule = current?.rrule;
  return typeof rule === 'string' && rule && !recurrenceOut(rule, new Date(current!.start as Date)) ? rule : null;
}

/** When a device's event is: instants in its zone, an all-day event as its local days (midnight UTC) in UTC. */
function timesIn(data: WbxmlElement | undefined, current: Row | null) {
  const start = parseDate(textOf(data, 'StartTime')) ?? (current?.start as Date | undefined) ?? new Date();
  const end = parseDate(textOf(data, 'EndTime')) ?? (current?.end as Date | undefined) ?? start;
  const allDay = textOf(data, 'AllDayEvent') === '1';
  const deviceZone = readZoneInformation(textOf(data, 'Timezone') ?? '');
  const zone = (deviceZone && zoneOf(deviceZone, start.getUTCFullYear())) ?? (current?.timeZone as string | undefined) ?? 'UTC';
  if (allDay) return { start: dayIn(start, zone), end: dayIn(end, zone), allDay, timeZone: 'UTC' };
  return { start, end, allDay, timeZone: zone };
}

/** The event fields a device's Add or Change sets. */
export function eventFields(data: WbxmlElement | undefined, _x: ItemContext, current: Row | null): Record<string, unknown> {
  const { start, end, allDay, timeZone } = timesIn(data, current);
  const location = textOf(kid(data, 'Location'), 'DisplayName') ?? textOf(data, 'Location') ?? '';
  const description = bodyText(data);
  const exdates = exdatesIn(data);
  const reminder = textOf(data, 'Reminder');
  const meeting = textOf(data, 'MeetingStatus');
  return {
    summary: (textOf(data, 'Subject') ?? '').slice(0, 500),
    location: location.slice(0, 500),
    start,
    end: end < start ? start : end,
    allDay,
    timeZone,
    rrule: ruleIn(data, current),
    attendees: attendeesIn(data),
    reminders: reminder && /^\d+$/.test(reminder) ? [{ minutesBefore: Math.min(Number(reminder), 40_320) }] : [],
    ...(exdates ? { exdates } : {}),
    ...(description !== undefined ? { description } : current ? {} : { description: '' }),
    ...statusIn(meeting, textOf(data, 'BusyStatus'), current),
    ...(current ? {} : createOnly(data)),
  };
}

/** Calendar FilterType: events ending inside the window, and recurring ones not over before it. */
export function eventInWindow(row: Row, filterType: number): boolean {
  const since = sinceOf(filterType);
  if (!since || new Date(row.end as Date) >= since) return true;
  if (typeof row.rrule !== 'string' || !row.rrule) return false;
  const until = ruleOf(row.rrule).UNTIL;
  const d = until ? untilOf(until) : undefined;
  return !d || d >= since;
}

/** A device deleting one occurrence: it joins the excluded ones. */
export const dropOccurrence = (row: Row, instance: Date): Record<string, unknown> => ({
  exdates: [...(Array.isArray(row.exdates) ? (row.exdates as Date[]) : []), instance],
});
