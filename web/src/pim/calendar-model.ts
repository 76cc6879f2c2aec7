// The calendar's ranges and layout without the DOM (unit-tested in test/unit/web/calendar.test.ts):
// the days a month, week or day view shows (weeks start on Monday), moving by one view, and which
// occurrences fall on a day.

export type CalendarView = 'month' | 'week' | 'day';

export interface Occurrence {
  eventUid: string;
  summary: string;
  start: string;
  end: string;
  allDay: boolean;
}

const DAY = 86_400_000;
const midnight = (d: Date) => new Date(d.getFullYear(), d.getMonth(), d.getDate());
const addDays = (d: Date, n: number) => new Date(d.getFullYear(), d.getMonth(), d.getDate() + n);
/** Monday of the week of d (local time). */
const monday = (d: Date) => addDays(midnight(d), -((d.getDay() + 6) % 7));

/** The days the view shows around `at`: whole weeks covering the month, the week, or the day. */
export function daysOf(view: CalendarView, at: Date): Date[] {
  if (view === 'day') return [midnight(at)];
  if (view === 'week') return Array.from({ length: 7 }, (_, i) => addDays(monday(at), i));
  const first = monday(new Date(at.getFullYear(), at.getMonth(), 1));
  const last = new Date(at.getFullYear(), at.getMonth() + 1, 0);
  const days: Date[] = [];
  for (let d = first; d <= last || days.length % 7; d = addDays(d, 1)) days.push(d);
  return days;
}

/** The range to ask occurrences for: from the first day's midnight to the day after the last. */
export function rangeOf(view: CalendarView, at: Date): { from: Date; to: Date } {
  const days = daysOf(view, at);
  return { from: days[0], to: addDays(days[days.length - 1], 1) };
}

/** `at` moved by one view (a month, a week, a day) forward or back. */
export function step(view: CalendarView, at: Date, by: 1 | -1): Date {
  if (view === 'month') return new Date(at.getFullYear(), at.getMonth() + by, 1);
  return addDays(at, view === 'week' ? 7 * by : by);
}

/** The occurrences on a day (any overlap with its local midnight-to-midnight), all-day ones first, then by start. */
export function onDay(all: Occurrence[], day: Date): Occurrence[] {
  const from = midnight(day).getTime();
  const to = addDays(day, 1).getTime();
  return all
    .filter((o) => Date.parse(o.start) < to && Math.max(Date.parse(o.end), Date.parse(o.start) + 1) > from)
    .sort((a, b) => Number(b.allDay) - Number(a.allDay) || Date.parse(a.start) - Date.parse(b.start));
}

/** The view's title: "November 2026", "Week of 23 Nov 2026", "Friday, 27 November 2026". */
export function titleOf(view: CalendarView, at: Date): string {
  if (view === 'month') return at.toLocaleDateString(undefined, { month: 'long', year: 'numeric' });
  if (view === 'week') return `Week of ${monday(at).toLocaleDateString(undefined, { day: 'numeric', month: 'short', year: 'numeric' })}`;
  return at.toLocaleDateString(undefined, { weekday: 'long', day: 'numeric', month: 'long', year: 'numeric' });
}

/** An occurrence's time of day as the reader's locale writes it. */
export const timeOf = (iso: string): string => new Date(iso).toLocaleTimeString(undefined, { hour: '2-digit', minute: '2-digit' });

export const sameDay = (a: Date, b: Date): boolean => midnight(a).getTime() === midnight(b).getTime();
export const DAY_MS = DAY;

/** A timed occurrence on a day's 24-hour column: top and height as fractions of the day, its lane among those it overlaps. */
export interface Placed {
  o: Occurrence;
  top: number;
  height: number;
  lane: number;
  lanes: number;
}

/** At least a quarter of an hour tall, so a short event stays readable and clickable. */
const MIN_SPAN = 15 * 60_000;

/**
 * The day's timed occurrences placed on its hour column (all-day ones go above it): clipped to the
 * day, overlapping ones side by side — each in the first lane free at its start, every occurrence of
 * a group of overlapping ones as wide as the group's lanes allow.
 */
export function placeOnDay(all: Occurrence[], day: Date): Placed[] {
  const from = midnight(day).getTime();
  const to = addDays(day, 1).getTime();
  const spans = onDay(all, day)
    .filter((o) => !o.allDay)
    .map((o) => {
      const start = Math.max(from, Date.parse(o.start));
      return { o, start, end: Math.min(to, Math.max(Date.parse(o.end), start + MIN_SPAN)) };
    })
    .sort((a, b) => a.start - b.start || b.end - a.end);
  const placed: Placed[] = [];
  let group: Placed[] = [];
  let laneEnds: number[] = [];
  let groupEnd = -Infinity;
  const close = () => group.forEach((p) => (p.lanes = laneEnds.length));
  for (const s of spans) {
    if (s.start >= groupEnd) {
      close();
      group = [];
      laneEnds = [];
    }
    let lane = laneEnds.findIndex((end) => end <= s.start);
    if (lane < 0) lane = laneEnds.push(s.end) - 1;
    else laneEnds[lane] = s.end;
    groupEnd = Math.max(groupEnd, s.end);
    const p = { o: s.o, top: (s.start - from) / DAY, height: (s.end - s.start) / DAY, lane, lanes: 1 };
    group.push(p);
    placed.push(p);
  }
  close();
  return placed;
}
