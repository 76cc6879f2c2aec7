// The iCalendar importer (lib/pim/ics.ts icsToEvents: calendar import and invitations in mail),
// the recurrence expansion every calendar view runs on what it imported (occurrences), and the
// export of the imported events read back in. Designed to refuse with api-106 only.
import fc from 'fast-check';
import { eventsToIcs, icsToEvents, occurrences } from '../../../lib/pim/ics.js';
import { address, fold, text, word } from '../grammar.js';
import { check, clientError, type FuzzTarget } from '../target.js';

const pad = (n: number, w = 2) => String(n).padStart(w, '0');
const stampOf = ([y, mo, d, h, mi, z]: [number, number, number, number, number, boolean]) =>
  `${pad(y, 4)}${pad(mo)}${pad(d)}T${pad(h)}${pad(mi)}00${z ? 'Z' : ''}`;
const stamp = fc.oneof(
  {
    arbitrary: fc
      .tuple(
        fc.integer({ min: 1990, max: 2040 }),
        fc.integer({ min: 1, max: 12 }),
        fc.integer({ min: 1, max: 28 }),
        fc.integer({ min: 0, max: 23 }),
        fc.integer({ min: 0, max: 59 }),
        fc.boolean(),
      )
      .map(stampOf),
    weight: 4,
  },
  {
    arbitrary: fc
      .tuple(
        fc.integer({ min: 0, max: 9999 }),
        fc.integer({ min: 0, max: 13 }),
        fc.integer({ min: 0, max: 32 }),
        fc.integer({ min: 0, max: 25 }),
        fc.integer({ min: 0, max: 61 }),
        fc.boolean(),
      )
      .map(stampOf),
    weight: 1,
  },
);
const dateOnly = fc
  .tuple(fc.integer({ min: 1, max: 9999 }), fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 31 }))
  .map(([y, m, d]) => `${y}${String(m).padStart(2, '0')}${String(d).padStart(2, '0')}`);
const tzid = fc.constantFrom(
  'Europe/Berlin',
  'America/New_York',
  'UTC',
  'W. Europe Standard Time',
  'Pacific Standard Time',
  '/mozilla.org/20050126_1/Europe/Berlin',
  'Custom Zone',
  'Etc/GMT+14',
  'Nowhere/Land',
  '',
);
const timeProp = (name: string) =>
  fc.oneof(
    { arbitrary: stamp.map((s) => `${name}:${s}`), weight: 3 },
    { arbitrary: fc.tuple(tzid, stamp).map(([z, s]) => `${name};TZID=${z}:${s.replace('Z', '')}`), weight: 3 },
    { arbitrary: dateOnly.map((d) => `${name};VALUE=DATE:${d}`), weight: 2 },
    { arbitrary: text(20).map((t) => `${name}:${t}`), weight: 1 },
  );
const byday = fc.oneof(
  {
    arbitrary: fc
      .tuple(fc.constantFrom('', '', '', '1', '-1', '2', '-2', '5', '+3'), fc.constantFrom('MO', 'TU', 'WE', 'TH', 'FR', 'SA', 'SU'))
      .map(([n, d]) => n + d),
    weight: 9,
  },
  { arbitrary: fc.constantFrom('0MO', '99TU', '-53SU', '53FR', 'XX', ''), weight: 1 },
);
const BY: Array<[string, number, number]> = [
  ['BYMONTHDAY', -31, 31],
  ['BYYEARDAY', -366, 366],
  ['BYWEEKNO', -53, 53],
  ['BYSETPOS', -366, 366],
  ['BYMONTH', 1, 12],
  ['BYHOUR', 0, 23],
  ['BYMINUTE', 0, 59],
  ['BYSECOND', 0, 60],
];
const rrulePart = fc.oneof(
  {
    arbitrary: fc
      .constantFrom('SECONDLY', 'MINUTELY', 'HOURLY', 'DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY', 'YEARLY', 'MONTHLY', 'NEVER')
      .map((f) => `FREQ=${f}`),
    weight: 3,
  },
  { arbitrary: fc.integer({ min: -1, max: 1000 }).map((n) => `INTERVAL=${n}`), weight: 1 },
  { arbitrary: fc.integer({ min: -1, max: 100000 }).map((n) => `COUNT=${n}`), weight: 1 },
  { arbitrary: fc.oneof(stamp, dateOnly).map((u) => `UNTIL=${u}`), weight: 1 },
  { arbitrary: fc.array(byday, { minLength: 1, maxLength: 4 }).map((d) => `BYDAY=${d.join(',')}`), weight: 2 },
  {
    arbitrary: fc
      .constantFrom(...BY)
      .chain(([k, lo, hi]) =>
        fc
          .array(
            fc.oneof(
              { arbitrary: fc.integer({ min: lo, max: hi }), weight: 9 },
              { arbitrary: fc.integer({ min: -400, max: 400 }), weight: 1 },
            ),
            { minLength: 1, maxLength: 4 },
          )
          .map((v) => `${k}=${v.join(',')}`),
      ),
    weight: 3,
  },
  { arbitrary: fc.constantFrom('WKST=SU', 'WKST=MO', 'WKST=XX', 'RSCALE=GREGORIAN', 'SKIP=FORWARD', 'X-FOO=1'), weight: 1 },
);
const freq = fc.constantFrom('DAILY', 'WEEKLY', 'MONTHLY', 'YEARLY', 'HOURLY', 'MINUTELY', 'SECONDLY').map((f) => `FREQ=${f}`);
const rrule = fc
  .tuple(fc.option(freq, { freq: 10, nil: '' }), fc.array(rrulePart, { maxLength: 5 }))
  .map(([f, p]) => `RRULE:${[f, ...p].filter(Boolean).join(';')}`);
const oneLine = (t: string) => t.replace(/\r\n|\r|\n/g, '\\n');
const vevent = fc
  .tuple(
    fc.option(timeProp('DTSTART'), { freq: 10, nil: '' }),
    fc.array(
      fc.oneof(
        { arbitrary: timeProp('DTSTART'), weight: 3 },
        { arbitrary: timeProp('DTEND'), weight: 2 },
        {
          arbitrary: fc.constantFrom('DURATION:PT1H', 'DURATION:P1D', 'DURATION:-PT5M', 'DURATION:P9999W', 'DURATION:PT', 'DURATION:bogus'),
          weight: 1,
        },
        { arbitrary: rrule, weight: 3 },
        { arbitrary: timeProp('EXDATE'), weight: 1 },
        { arbitrary: timeProp('RECURRENCE-ID'), weight: 1 },
        {
          arbitrary: fc
            .tuple(fc.constantFrom('SUMMARY', 'DESCRIPTION', 'LOCATION', 'UID', 'STATUS', 'SEQUENCE', 'COMMENT'), text(40))
            .map(([k, v]) => `${k}:${oneLine(v)}`),
          weight: 3,
        },
        {
          arbitrary: fc
            .tuple(
              fc.constantFrom('ORGANIZER', 'ATTENDEE'),
              text(15),
              address,
              fc.constantFrom('', ';ROLE=CHAIR', ';PARTSTAT=ACCEPTED', ';RSVP=TRUE', ';PARTSTAT="x;y"'),
            )
            .map(([k, cn, a, p]) => `${k};CN="${oneLine(cn).replace(/"/g, '')}"${p}:mailto:${oneLine(a)}`),
          weight: 2,
        },
        {
          arbitrary: fc.constantFrom(
            'BEGIN:VALARM\nTRIGGER:-PT15M\nACTION:DISPLAY\nEND:VALARM',
            'BEGIN:VALARM\nTRIGGER;VALUE=DATE-TIME:20260101T000000Z\nEND:VALARM',
            'BEGIN:VALARM\nTRIGGER:-P9999W\nEND:VALARM',
            'SEQUENCE:99999999999999999999',
            'STATUS:CANCELLED',
          ),
          weight: 1,
        },
      ),
      { maxLength: 10 },
    ),
  )
  .map(([start, ps]) => `BEGIN:VEVENT\n${[start, ...ps].filter(Boolean).join('\n')}\nEND:VEVENT`);
const vtimezone = fc
  .tuple(tzid, stamp, rrule, fc.constantFrom('+0100', '+0200', '-1200', '+9999', 'bogus'))
  .map(
    ([z, s, r, off]) =>
      `BEGIN:VTIMEZONE\nTZID:${z}\nBEGIN:STANDARD\nDTSTART:${s.replace('Z', '')}\nTZOFFSETFROM:${off}\nTZOFFSETTO:+0100\n${r}\nEND:STANDARD\nEND:VTIMEZONE`,
  );
const calendar = fc
  .tuple(
    fc.constantFrom('', 'METHOD:REQUEST', 'METHOD:CANCEL', 'METHOD:REPLY', `METHOD:${'X'.repeat(50)}`),
    fc.array(vtimezone, { maxLength: 2 }),
    fc.array(vevent, { maxLength: 4 }),
    fc.constantFrom('\r\n', '\n'),
    fc.constantFrom(0, 0, 75, 20),
    word,
  )
  .map(([method, zones, events, nl, width, prodid]) =>
    Buffer.from(
      ['BEGIN:VCALENDAR', 'VERSION:2.0', `PRODID:${prodid}`, method, ...zones, ...events, 'END:VCALENDAR']
        .filter(Boolean)
        .join('\n')
        .split('\n')
        .map((l) => fold(l, width, nl))
        .join(nl),
      'utf8',
    ),
  );

const DAY = 86_400_000;

const target: FuzzTarget = {
  name: 'ics',
  expected: clientError('api-106'),
  generate: calendar,
  dictionary: [
    '\r\nBEGIN:VEVENT\r\n',
    'END:VEVENT\r\n',
    'RRULE:FREQ=SECONDLY;',
    ';BYSETPOS=-1',
    ';COUNT=',
    ';TZID=',
    'VALUE=DATE:',
    '\r\n ',
    'BEGIN:VTIMEZONE',
    'X-',
    ';',
    ':',
    ',',
  ],
  maxLength: 32 * 1024,
  fuzz(data) {
    const { events } = icsToEvents(data.toString('utf8'));
    for (const ev of events) {
      check(!Number.isNaN(ev.start.getTime()) && !Number.isNaN(ev.end.getTime()), 'start and end are valid dates');
      // A calendar view of the event's first year (as the week/month views ask).
      const from = new Date(ev.start.getTime() - DAY);
      const occ = occurrences(ev, from, new Date(ev.start.getTime() + 366 * DAY), 500);
      check(occ.length <= 500, 'at most max occurrences');
      check(
        occ.every((o) => !Number.isNaN(o.start.getTime()) && !Number.isNaN(o.end.getTime())),
        'occurrences are valid dates',
      );
    }
    // What is imported exports again, and the export reads back as many events.
    if (events.length) check(icsToEvents(eventsToIcs(events)).events.length === events.length, 'export reads back');
  },
};
export default target;
