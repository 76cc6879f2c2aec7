import { findIana, findWindows, WINDOWS_TO_IANA_MAP } from 'windows-iana';

// An event's zone as a device holds it: MS-ASDTYPE's TIME_ZONE_INFORMATION, 172 bytes little-endian
// — Bias (minutes, UTC = local + Bias), StandardName (32 UTF-16 units), StandardDate (SYSTEMTIME),
// StandardBias, DaylightName, DaylightDate, DaylightBias. A SYSTEMTIME with year 0 is a yearly
// rule: the wDay'th (5: last) wDayOfWeek of wMonth at wHour:wMinute, on the clock of the time it
// ends. The device expands a recurrence in this zone, so a weekly 09:00 stays 09:00 across DST.
// Rules come from the platform's zone data (Intl) for the event's year; names are Windows zone
// names (CLDR through windows-iana), as Exchange writes them and devices send them back.

export const TZI_BYTES = 172;
const NAME_BYTES = 64;

export interface Transition {
  month: number;
  dayOfWeek: number;
  /** 1–4, or 5 for the last such weekday of the month. */
  week: number;
  hour: number;
  minute: number;
}

export interface ZoneRule {
  /** Minutes to add to local standard time for UTC. */
  bias: number;
  standard: Transition | null;
  daylight: Transition | null;
  /** Minutes to add to the bias while daylight time is in force (negative: clocks go forward). */
  daylightBias: number;
}

const offsetFormats = new Map<string, Intl.DateTimeFormat>();

/** Minutes east of UTC in `tz` at instant `t`. */
function offsetAt(tz: string, t: number): number {
  let f = offsetFormats.get(tz);
  if (!f) offsetFormats.set(tz, (f = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' })));
  const name = f.formatToParts(t).find((p) => p.type === 'timeZoneName')?.value ?? 'GMT';
  const m = /GMT([+-])(\d{2}):(\d{2})/.exec(name);
  return m ? (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3])) : 0;
}

const DAY = 86_400_000;

/** The instant (to the minute) in (lo, hi] at which the offset stops being what it is at lo. */
function changeBetween(tz: string, lo: number, hi: number): number {
  const before = offsetAt(tz, lo);
  while (hi - lo > 60_000) {
    const mid = lo + Math.floor((hi - lo) / 120_000) * 60_000;
    if (offsetAt(tz, mid) === before) lo = mid;
    else hi = mid;
  }
  return hi;
}

/** A change of offset at `at` as the yearly rule that names it, on the clock before it. */
function transitionOf(at: number, offsetBefore: number): Transition {
  const local = new Date(at + offsetBefore * 60_000);
  const day = local.getUTCDate();
  const daysInMonth = new Date(Date.UTC(local.getUTCFullYear(), local.getUTCMonth() + 1, 0)).getUTCDate();
  return {
    month: local.getUTCMonth() + 1,
    dayOfWeek: local.getUTCDay(),
    week: day + 7 > daysInMonth ? 5 : Math.ceil(day / 7),
    hour: local.getUTCHours(),
    minute: local.getUTCMinutes(),
  };
}

const rules = new Map<string, ZoneRule>();

/**
 * The zone's rule in `year`: its two changes of offset, or none (a zone without daylight time, or
 * one whose year is not two changes, is its offset at `at`).
 */
export function zoneRule(tz: string, year: number, at: number = Date.UTC(year, 0, 1)): ZoneRule {
  const key = `${tz} ${year}`;
  const known = rules.get(key);
  if (known) return known;
  const changes: Array<{ at: number; before: number; after: number }> = [];
  const start = Date.UTC(year, 0, 1);
  const end = Date.UTC(year + 1, 0, 1);
  for (let t = start; t < end; t += DAY) {
    const next = Math.min(t + DAY, end);
    const before = offsetAt(tz, t);
    if (offsetAt(tz, next) !== before) {
      const when = changeBetween(tz, t, next);
      changes.push({ at: when, before, after: offsetAt(tz, when) });
    }
  }
  let rule: ZoneRule;
  const forward = changes.find((c) => c.after > c.before);
  const back = changes.find((c) => c.after < c.before);
  if (changes.length === 2 && forward && back) {
    rule = {
      bias: -back.after,
      standard: transitionOf(back.at, back.before),
      daylight: transitionOf(forward.at, forward.before),
      daylightBias: -(forward.after - forward.before),
    };
  } else {
    rule = { bias: -offsetAt(tz, at), standard: null, daylight: null, daylightBias: 0 };
  }
  if (rules.size > 5000) rules.clear();
  rules.set(key, rule);
  return rule;
}

function writeTransition(buf: Buffer, at: number, t: Transition | null): void {
  if (!t) return;
  buf.writeUInt16LE(t.month, at + 2);
  buf.writeUInt16LE(t.dayOfWeek, at + 4);
  buf.writeUInt16LE(t.week, at + 6);
  buf.writeUInt16LE(t.hour, at + 8);
  buf.writeUInt16LE(t.minute, at + 10);
}

function readTransition(buf: Buffer, at: number): Transition | null {
  const month = buf.readUInt16LE(at + 2);
  if (!month) return null;
  return {
    month,
    dayOfWeek: buf.readUInt16LE(at + 4),
    week: buf.readUInt16LE(at + 6),
    hour: buf.readUInt16LE(at + 8),
    minute: buf.readUInt16LE(at + 10),
  };
}

function writeName(buf: Buffer, at: number, name: string): void {
  buf.write(name.slice(0, NAME_BYTES / 2 - 1), at, NAME_BYTES - 2, 'utf16le');
}

const readName = (buf: Buffer, at: number) => buf.toString('utf16le', at, at + NAME_BYTES).replace(/\0.*$/s, '');

/** The Timezone element's value (base64) for an event planned in `tz`, starting at `start`. */
export function zoneInformation(tz: string, start: Date): string {
  const rule = zoneRule(tz, start.getUTCFullYear(), start.getTime());
  const buf = Buffer.alloc(TZI_BYTES);
  const windows = findWindows(tz)[0] ?? (tz === 'UTC' ? 'UTC' : tz);
  buf.writeInt32LE(rule.bias, 0);
  writeName(buf, 4, windows);
  writeTransition(buf, 68, rule.standard);
  writeName(buf, 88, rule.daylight ? windows.replace(/Standard Time$/, 'Daylight Time') : windows);
  writeTransition(buf, 152, rule.daylight);
  buf.writeInt32LE(rule.daylight ? rule.daylightBias : 0, 168);
  return buf.toString('base64');
}

/** Midnight UTC of the date the wall clock in `tz` shows at `instant`: how an all-day event's day is stored. */
export function dayIn(instant: Date, tz: string): Date {
  const local = new Date(instant.getTime() + offsetAt(tz, instant.getTime()) * 60_000);
  return new Date(Date.UTC(local.getUTCFullYear(), local.getUTCMonth(), local.getUTCDate()));
}

export interface DeviceZone {
  name: string;
  rule: ZoneRule;
}

/** A device's Timezone value read; null when it is not 172 bytes. */
export function readZoneInformation(b64: string): DeviceZone | null {
  const buf = Buffer.from(b64, 'base64');
  if (buf.length !== TZI_BYTES) return null;
  const daylight = readTransition(buf, 152);
  const standard = readTransition(buf, 68);
  const both = daylight && standard;
  return {
    name: readName(buf, 4).trim(),
    rule: {
      bias: buf.readInt32LE(0) + (both ? buf.readInt32LE(84) : 0),
      standard: both ? standard : null,
      daylight: both ? daylight : null,
      daylightBias: both ? buf.readInt32LE(168) - buf.readInt32LE(84) : 0,
    },
  };
}

const sameTransition = (a: Transition | null, b: Transition | null, loose: boolean) =>
  a === b ||
  (!!a &&
    !!b &&
    a.month === b.month &&
    a.dayOfWeek === b.dayOfWeek &&
    a.week === b.week &&
    (loose || (a.hour === b.hour && a.minute === b.minute)));

const sameRule = (a: ZoneRule, b: ZoneRule, loose: boolean) =>
  a.bias === b.bias &&
  a.daylightBias === b.daylightBias &&
  sameTransition(a.standard, b.standard, loose) &&
  sameTransition(a.daylight, b.daylight, loose);

/** Every Windows zone's main IANA zone, in CLDR's order: where a zone with no usable name is looked for. */
let mainZones: string[] | undefined;
const candidates = () =>
  (mainZones ??= [
    ...new Set(
      Object.values(WINDOWS_TO_IANA_MAP)
        .filter((z) => z.territory === '001')
        .map((z) => z.iana[0]),
    ),
  ]);

/**
 * The IANA zone of a device's Timezone in `year`: the zone its name says (a Windows or IANA name)
 * when that zone keeps the same rule, else the first zone keeping it (the exact changes, then the
 * same days at another hour), else a fixed offset for a zone without daylight time; null when
 * nothing matches.
 */
export function zoneOf(device: DeviceZone, year: number): string | null {
  const named = [...findIana(device.name), ...(isZone(device.name) ? [device.name] : [])];
  for (const loose of [false, true])
    for (const tz of [...named, ...candidates()]) if (isZone(tz) && sameRule(zoneRule(tz, year), device.rule, loose)) return tz;
  const { bias, daylight } = device.rule;
  if (daylight || bias % 60 !== 0 || Math.abs(bias) > 14 * 60) return null;
  return bias === 0 ? 'UTC' : `Etc/GMT${bias > 0 ? '+' : '-'}${Math.abs(bias) / 60}`;
}

function isZone(tz: string): boolean {
  if (!tz) return false;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}
