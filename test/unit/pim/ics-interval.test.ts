// A recurrence INTERVAL ical.js would walk one day at a time for hours (found by the ics fuzz target,
// test/fuzz/corpus/ics/huge-interval.ics): refused on import with a reason, and a stored one expands
// to its first occurrence only.
import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { isApiError } from '../../../lib/errors/index.js';
import { icsToEvents, occurrences, rruleProblem } from '../../../lib/pim/ics.js';

const HUGE = 'FREQ=WEEKLY;UNTIL=20270413T073000Z;INTERVAL=45566778899';

describe('recurrence INTERVAL', () => {
  it('rruleProblem names an INTERVAL above the limit and accepts a large one below it', () => {
    expect(rruleProblem(HUGE)).toBe('has an INTERVAL above 10000');
    expect(rruleProblem('FREQ=DAILY;INTERVAL=10001')).toBe('has an INTERVAL above 10000');
    expect(rruleProblem('FREQ=DAILY;INTERVAL=1000')).toBeNull();
    expect(rruleProblem('FREQ=WEEKLY;INTERVAL=2')).toBeNull();
  });

  it("the fuzzer's invitation is refused as invalid iCalendar (api-106), naming the RRULE", () => {
    const text = readFileSync(new URL('../../fuzz/corpus/ics/huge-interval.ics', import.meta.url), 'utf8');
    let error: unknown = null;
    try {
      icsToEvents(text);
    } catch (e) {
      error = e;
    }
    expect(isApiError(error) && error.code).toBe('api-106');
    expect((error as Error).message).toMatch(/RRULE has an INTERVAL above 10000/);
  });

  it('a stored rule with such an INTERVAL expands to its first occurrence only', () => {
    const start = new Date('2026-04-13T07:00:00Z');
    const end = new Date('2026-04-13T07:30:00Z');
    const got = occurrences(
      { start, end, rrule: HUGE, exdates: [], timeZone: 'UTC', allDay: false },
      new Date('2026-01-01Z'),
      new Date('2028-01-01Z'),
    );
    expect(got).toEqual([{ start, end }]);
  });
});
