// The calendar's days and ranges (web/src/pim/calendar-model.ts): weeks from Monday, whole weeks
// around a month, moving by one view, and which occurrences a day shows. Local time (TZ of the run).
import { describe, expect, it } from 'vitest';
import { daysOf, onDay, placeOnDay, rangeOf, step } from '../../../web/src/pim/calendar-model.js';

const d = (y: number, m: number, day: number, h = 0) => new Date(y, m - 1, day, h);
const ymd = (x: Date) => `${x.getFullYear()}-${x.getMonth() + 1}-${x.getDate()}`;

describe('calendar model', () => {
  it('a month view is whole weeks from the Monday before the 1st to the Sunday after the last', () => {
    const days = daysOf('month', d(2026, 11, 27)); // November 2026: Sunday the 1st, Monday the 30th
    expect(ymd(days[0])).toBe('2026-10-26');
    expect(ymd(days.at(-1)!)).toBe('2026-12-6');
    expect(days.length % 7).toBe(0);
    expect(days.every((x) => x.getHours() === 0)).toBe(true);
    expect(daysOf('month', d(2027, 2, 10)).length).toBe(28); // February 2027 starts on a Monday and ends on a Sunday
  });

  it('a week view is Monday to Sunday; a day view is the day; the range ends at the next midnight', () => {
    expect(daysOf('week', d(2026, 11, 29)).map(ymd)).toEqual([
      '2026-11-23',
      '2026-11-24',
      '2026-11-25',
      '2026-11-26',
      '2026-11-27',
      '2026-11-28',
      '2026-11-29',
    ]);
    expect(daysOf('day', d(2026, 11, 27, 15)).map(ymd)).toEqual(['2026-11-27']);
    const r = rangeOf('week', d(2026, 11, 27));
    expect([ymd(r.from), ymd(r.to)]).toEqual(['2026-11-23', '2026-11-30']);
  });

  it('moves by a month (from any day, to the 1st), a week or a day', () => {
    expect(ymd(step('month', d(2026, 1, 31), 1))).toBe('2026-2-1');
    expect(ymd(step('month', d(2026, 1, 15), -1))).toBe('2025-12-1');
    expect(ymd(step('week', d(2026, 12, 28), 1))).toBe('2027-1-4');
    expect(ymd(step('day', d(2026, 3, 1), -1))).toBe('2026-2-28');
  });

  it('a day shows what overlaps it: all-day first, then by start; an event ending at midnight stays on its day', () => {
    const o = (summary: string, start: Date, end: Date, allDay = false) => ({
      eventUid: summary,
      summary,
      start: start.toISOString(),
      end: end.toISOString(),
      allDay,
    });
    const all = [
      o('late', d(2026, 11, 27, 18), d(2026, 11, 27, 19)),
      o('early', d(2026, 11, 27, 8), d(2026, 11, 27, 9)),
      o('holiday', d(2026, 11, 27), d(2026, 11, 28), true),
      o('overnight', d(2026, 11, 26, 22), d(2026, 11, 27, 2)),
      o('yesterday', d(2026, 11, 26, 10), d(2026, 11, 27)),
      o('zero length', d(2026, 11, 27, 12), d(2026, 11, 27, 12)),
    ];
    expect(onDay(all, d(2026, 11, 27)).map((x) => x.summary)).toEqual(['holiday', 'overnight', 'early', 'zero length', 'late']);
    expect(onDay(all, d(2026, 11, 26)).map((x) => x.summary)).toEqual(['yesterday', 'overnight']);
  });

  it('places timed occurrences on the hour column: clipped to the day, at least a quarter hour, overlapping ones side by side', () => {
    const o = (summary: string, start: Date, end: Date, allDay = false) => ({
      eventUid: summary,
      summary,
      start: start.toISOString(),
      end: end.toISOString(),
      allDay,
    });
    const at = (h: number, m = 0) => new Date(2026, 10, 27, h, m);
    const placed = placeOnDay(
      [
        o('holiday', d(2026, 11, 27), d(2026, 11, 28), true),
        o('overnight', d(2026, 11, 26, 22), at(2)),
        o('standup', at(9), at(9, 15)),
        o('review', at(9), at(11)),
        o('lunch', at(10), at(11)),
        o('late', at(18), at(18)),
      ],
      d(2026, 11, 27),
    );
    const show = (p: (typeof placed)[number]) => [p.o.summary, Math.round(p.top * 96), Math.round(p.height * 96), p.lane, p.lanes]; // quarter hours
    expect(placed.map(show)).toEqual([
      ['overnight', 0, 8, 0, 1], // from midnight: the day before is not this column's
      ['review', 36, 8, 0, 2],
      ['standup', 36, 1, 1, 2],
      ['lunch', 40, 4, 1, 2], // standup's lane is free again at 10
      ['late', 72, 1, 0, 1], // no length: a quarter hour
    ]);
  });
});
