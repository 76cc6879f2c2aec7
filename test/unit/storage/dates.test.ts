import { describe, expect, it } from 'vitest';
import { isoDate, sqliteDate } from '../../../lib/storage/model.js';

// The read path turns every stored date text into a Date itself (lib/storage/model.ts).
describe('stored date texts', () => {
  it('reads TypeORM SQLite datetimes with and without milliseconds, as UTC', () => {
    expect(sqliteDate('2026-11-23 21:41:05.123').toISOString()).toBe('2026-11-23T21:41:05.123Z');
    expect(sqliteDate('2026-11-23 21:41:05').toISOString()).toBe('2026-11-23T21:41:05.000Z');
    expect(sqliteDate('1999-01-02 03:04:05.5').toISOString()).toBe('1999-01-02T03:04:05.500Z');
    expect(sqliteDate('2024-02-29 23:59:59.09').getTime()).toBe(Date.UTC(2024, 1, 29, 23, 59, 59, 90));
  });

  it('reads PostgreSQL ISO texts and answers the same text as JSON', () => {
    const d = isoDate('2026-11-23T21:41:05.987Z');
    expect(d.getTime()).toBe(Date.UTC(2026, 10, 23, 21, 41, 5, 987));
    expect(JSON.stringify({ d })).toBe('{"d":"2026-11-23T21:41:05.987Z"}');
    expect(isoDate('2026-11-23T21:41:05+02:00').toISOString()).toBe('2026-11-23T19:41:05.000Z');
  });
});
