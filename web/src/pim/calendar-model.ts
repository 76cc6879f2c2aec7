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

export const sameDay = (a: Date, b: Date): boolean => midnight(a).getTime() === midnight(b).getTime();
export const DAY_MS = DAY;
