// The zone of a calendar event as a device holds it (lib/plugins/eas/timezone.ts): the rules of
// zones north and south of the equator and without daylight time, and what a device's value maps to.
import { describe, expect, it } from 'vitest';
import { readZoneInformation, zoneInformation, zoneOf, zoneRule } from '../../../lib/plugins/eas/timezone.js';

describe('TIME_ZONE_INFORMATION', () => {
  it('states a southern zone with daylight time from October to April', () => {
    expect(zoneRule('Australia/Sydney', 2026)).toEqual({
      bias: -600,
      standard: { month: 4, dayOfWeek: 0, week: 1, hour: 3, minute: 0 },
      daylight: { month: 10, dayOfWeek: 0, week: 1, hour: 2, minute: 0 },
      daylightBias: -60,
    });
  });

  it('states a zone without daylight time by its offset alone, half hours included', () => {
    const back = readZoneInformation(zoneInformation('Asia/Kolkata', new Date('2026-06-01T00:00:00Z')))!;
    expect(back.rule).toEqual({ bias: -330, standard: null, daylight: null, daylightBias: 0 });
    expect(back.name).toBe('India Standard Time');
    expect(['Asia/Kolkata', 'Asia/Calcutta']).toContain(zoneOf(back, 2026));
  });

  it('maps what a device sends: its named zone, the first zone keeping an unnamed rule, a fixed offset, or nothing', () => {
    const named = readZoneInformation(zoneInformation('America/New_York', new Date('2026-01-10T00:00:00Z')))!;
    expect(zoneOf(named, 2026)).toBe('America/New_York');
    expect(zoneOf({ name: '', rule: zoneRule('Europe/London', 2026) }, 2026)).toBe('Europe/London');
    expect(zoneOf({ name: 'Nowhere', rule: { bias: 120, standard: null, daylight: null, daylightBias: 0 } }, 2026)).toMatch(
      /^(Etc\/GMT\+2|America\/Noronha|Atlantic\/South_Georgia)$/,
    );
    const odd = { bias: 17, standard: null, daylight: null, daylightBias: 0 };
    expect(zoneOf({ name: '', rule: odd }, 2026)).toBeNull();
    expect(readZoneInformation('AAAA')).toBeNull();
  });
});
