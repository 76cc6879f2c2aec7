// Wall-clock time in an IANA zone <-> UTC instants, with the platform's own zone data (Intl), so
// recurring events keep their local time across daylight-saving changes.

export interface Wall {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
}

const formatters = new Map<string, Intl.DateTimeFormat>();

function formatter(tz: string): Intl.DateTimeFormat {
  let f = formatters.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(tz, f);
  }
  return f;
}

export function wallOf(instant: Date, tz: string): Wall {
  const parts = Object.fromEntries(
    formatter(tz)
      .formatToParts(instant)
      .map((p) => [p.type, p.value]),
  );
  return { year: +parts.year, month: +parts.month, day: +parts.day, hour: +parts.hour % 24, minute: +parts.minute, second: +parts.second };
}

/** The instant at which the wall clock in tz shows `w` (the earlier one in a repeated hour). */
export function instantOf(w: Wall, tz: string): Date {
  const asUtc = Date.UTC(w.year, w.month - 1, w.day, w.hour, w.minute, w.second);
  let guess = asUtc;
  for (let i = 0; i < 3; i++) {
    const seen = wallOf(new Date(guess), tz);
    const diff = Date.UTC(seen.year, seen.month - 1, seen.day, seen.hour, seen.minute, seen.second) - asUtc;
    if (diff === 0) break;
    guess -= diff;
  }
  return new Date(guess);
}
