// Calendar over mobile sync (MS-ASCAL) against the real protocols app, on both SQL engines: events
// with attendees and recurrence in 14.1 and 16.1 form, a device's Add, Change and Delete (an
// occurrence by InstanceId included), FilterType and ItemOperations Fetch. Every WBXML body is also
// decoded by libwbxml and Horde and checked with the schemas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../../helpers/databases.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { as, asb, crossDecode, fh, io, kid, kids, ns, textOf } from './_client.js';
import { addItem, changeItem, commandsOf, pimFixture, responsesOf, type PimFixture } from './_pim.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');

const ca = ns('Calendar');

/** TIME_ZONE_INFORMATION (MS-ASDTYPE 2.6.4) as Exchange and iOS write it, built by hand: rules are [month, weekday, week, hour]. */
type Rule = [number, number, number, number];
function tzi(bias: number, standard: Rule | null, daylight: Rule | null, daylightBias: number, name = ''): string {
  const b = Buffer.alloc(172);
  b.writeInt32LE(bias, 0);
  b.write(name, 4, 62, 'utf16le');
  const rule = (at: number, r: Rule | null) => r?.forEach((v, i) => b.writeUInt16LE(v, at + 2 + 2 * i));
  rule(68, standard);
  rule(152, daylight);
  b.writeInt32LE(daylightBias, 168);
  return b.toString('base64');
}
function readTzi(b64: string) {
  const b = Buffer.from(b64, 'base64');
  const rule = (at: number) => [1, 2, 3, 4].map((i) => b.readUInt16LE(at + 2 * i));
  const name = (at: number) => b.toString('utf16le', at, at + 64).replace(/\0+$/, '');
  return {
    bias: b.readInt32LE(0),
    name: name(4),
    standard: rule(68),
    daylight: rule(152),
    daylightBias: b.readInt32LE(168),
    daylightName: name(88),
  };
}

describe.each(backends)('calendar over mobile sync ($name)', (backend) => {
  let f: PimFixture;
  beforeAll(async () => {
    f = await pimFixture(backend);
  }, 60_000);
  afterAll(async () => f?.close());

  const weekly = async () =>
    f.api('POST', '/api/mail/calendar-events', {
      mailboxUid: f.s.aliceBox,
      summary: 'Standup',
      location: 'Room 1',
      description: 'Daily-ish',
      start: '2026-11-23T09:00:00.000Z',
      end: '2026-11-23T09:15:00.000Z',
      rrule: 'FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20270101T000000Z',
      exdates: ['2026-11-25T09:00:00.000Z'],
      organizer: { email: 'alice@example.test', name: 'Alice' },
      attendees: [
        { email: 'bob@example.test', name: 'Bob', partstat: 'accepted' },
        { email: 'carol@example.net', role: 'opt-participant' },
      ],
      reminders: [{ minutesBefore: 10 }],
    });

  it('an event with attendees and a weekly recurrence arrives in 14.1 and 16.1 form, and round-trips a device change', async () => {
    const { d, d16, folders, sync, api } = f;
    const ev = await weekly();
    await sync(d, folders.Calendar.id);
    const [add] = commandsOf(await sync(d, folders.Calendar.id));
    const data = kid(add, 'ApplicationData')!;
    expect(textOf(data, 'StartTime')).toBe('20261123T090000Z');
    expect(textOf(data, 'EndTime')).toBe('20261123T091500Z');
    expect(textOf(data, 'Subject')).toBe('Standup');
    expect(textOf(data, 'Location')).toBe('Room 1');
    expect(textOf(data, 'UID')).toBe(ev.icalUid);
    expect(textOf(data, 'Reminder')).toBe('10');
    expect(textOf(data, 'MeetingStatus')).toBe('1');
    expect(Buffer.from(textOf(data, 'Timezone')!, 'base64')).toHaveLength(172);
    const rec = kid(data, 'Recurrence')!;
    expect([textOf(rec, 'Type'), textOf(rec, 'DayOfWeek'), textOf(rec, 'Interval'), textOf(rec, 'Until')]).toEqual([
      '1',
      '10',
      '1',
      '20270101T000000Z',
    ]);
    const exc = kid(kid(data, 'Exceptions'), 'Exception')!;
    expect([textOf(exc, 'Deleted'), textOf(exc, 'ExceptionStartTime')]).toEqual(['1', '20261125T090000Z']);
    const attendees = kids(kid(data, 'Attendees'), 'Attendee').map((a) => [
      textOf(a, 'Email'),
      textOf(a, 'Name'),
      textOf(a, 'AttendeeStatus'),
      textOf(a, 'AttendeeType'),
    ]);
    expect(attendees).toEqual([
      ['bob@example.test', 'Bob', '3', '1'],
      ['carol@example.net', 'carol@example.net', '5', '2'],
    ]);
    // 16.1: the location is airsyncbase:Location, a deleted occurrence names its InstanceId.
    await sync(d16, folders.Calendar.id);
    const data16 = kid(commandsOf(await sync(d16, folders.Calendar.id))[0], 'ApplicationData')!;
    expect(textOf(kid(data16, 'Location'), 'DisplayName')).toBe('Room 1');
    expect(kid(data16, 'Location')!.page).toBe('AirSyncBase');
    expect(textOf(kid(kid(data16, 'Exceptions'), 'Exception'), 'InstanceId')).toBe('20261125T090000Z');
    // The device sends the event back with a new subject: the rule, attendees and exceptions stay as they were.
    const back = data.children!.filter((c) => !['Subject', 'DtStamp', 'UID', 'MeetingStatus'].includes(c.tag));
    await sync(d, folders.Calendar.id, {
      commands: [as('Change', [as('ServerId', ev.uid), as('ApplicationData', [...back, ca('Subject', 'Standup (moved)')])])],
    });
    expect(await api('GET', `/api/mail/calendar-events/${ev.uid}`)).toMatchObject({
      summary: 'Standup (moved)',
      rrule: 'FREQ=WEEKLY;BYDAY=MO,WE;UNTIL=20270101T000000Z',
      exdates: ['2026-11-25T09:00:00.000Z'],
      location: 'Room 1',
      attendees: [
        { email: 'bob@example.test', name: 'Bob', partstat: 'accepted', role: 'req-participant' },
        { email: 'carol@example.net', partstat: 'needs-action', role: 'opt-participant' },
      ],
      reminders: [{ minutesBefore: 10 }],
    });
  });

  it("a device's calendar Add (monthly nth weekday), an occurrence deleted by InstanceId (16.1), and a Delete", async () => {
    const { stack, s, d16, folders, sync, api } = f;
    const r = await sync(d16, folders.Calendar.id, {
      commands: [
        as('Add', [
          as('ClientId', 'e1'),
          as('ApplicationData', [
            ca('StartTime', '20261201T140000Z'),
            ca('EndTime', '20261201T150000Z'),
            ca('Subject', 'Board'),
            asb('Location', [asb('DisplayName', 'HQ')]),
            ca('Attendees', [ca('Attendee', [ca('Email', 'dave@example.net'), ca('Name', 'Dave'), ca('AttendeeType', '1')])]),
            ca('Recurrence', [ca('Type', '3'), ca('WeekOfMonth', '1'), ca('DayOfWeek', '4'), ca('Interval', '1'), ca('Occurrences', '6')]),
            ca('AllDayEvent', '0'),
          ]),
        ]),
      ],
    });
    const uid = textOf(responsesOf(r)[0], 'ServerId')!;
    expect(textOf(responsesOf(r)[0], 'Status')).toBe('1');
    expect(await api('GET', `/api/mail/calendar-events/${uid}`)).toMatchObject({
      summary: 'Board',
      location: 'HQ',
      start: '2026-12-01T14:00:00.000Z',
      rrule: 'FREQ=MONTHLY;BYDAY=1TU;COUNT=6',
      attendees: [{ email: 'dave@example.net', name: 'Dave' }],
    });
    await sync(d16, folders.Calendar.id, {
      commands: [as('Delete', [as('ServerId', uid), asb('InstanceId', '20270105T140000Z')])],
    });
    expect((await api('GET', `/api/mail/calendar-events/${uid}`)).exdates).toEqual(['2027-01-05T14:00:00.000Z']);
    await sync(d16, folders.Calendar.id, { commands: [as('Delete', [as('ServerId', uid)])] });
    expect((await stack.call('GET', `/api/mail/calendar-events/${uid}`, s.alice)).status).toBe(404);
  });

  it("a timed event carries its zone, so the device keeps its local time across DST; a device's zone sets the event's", async () => {
    const { s, d, folders, sync, api } = f;
    const berlin = await api('POST', '/api/mail/calendar-events', {
      mailboxUid: s.aliceBox,
      summary: 'Berlin weekly',
      start: '2026-03-02T08:00:00.000Z',
      end: '2026-03-02T08:30:00.000Z',
      timeZone: 'Europe/Berlin',
      rrule: 'FREQ=WEEKLY;COUNT=6',
    });
    const holiday = await api('POST', '/api/mail/calendar-events', {
      mailboxUid: s.aliceBox,
      summary: 'Holiday',
      start: '2026-12-25T00:00:00.000Z',
      end: '2026-12-26T00:00:00.000Z',
      allDay: true,
    });
    const got = commandsOf(await sync(d, folders.Calendar.id));
    const dataOf = (uid: string) =>
      kid(
        got.find((c) => textOf(c, 'ServerId') === uid),
        'ApplicationData',
      );
    expect(readTzi(textOf(dataOf(berlin.uid), 'Timezone')!)).toEqual({
      bias: -60,
      name: 'W. Europe Standard Time',
      standard: [10, 0, 5, 3],
      daylight: [3, 0, 5, 2],
      daylightBias: -60,
      daylightName: 'W. Europe Daylight Time',
    });
    expect(readTzi(textOf(dataOf(holiday.uid), 'Timezone')!)).toMatchObject({ bias: 0, standard: [0, 0, 0, 0], daylight: [0, 0, 0, 0] });
    // A phone in New York (a zone without names, as some devices send it) adds a weekly 09:00.
    const newYork = tzi(300, [11, 0, 1, 2], [3, 0, 2, 2], -60);
    const r = await sync(d, folders.Calendar.id, {
      commands: [
        addItem('tz1', [
          ca('Timezone', newYork),
          ca('StartTime', '20260302T140000Z'),
          ca('EndTime', '20260302T150000Z'),
          ca('Subject', 'New York weekly'),
          ca('Recurrence', [ca('Type', '1'), ca('DayOfWeek', '2'), ca('Interval', '1'), ca('Occurrences', '3')]),
          ca('AllDayEvent', '0'),
        ]),
        addItem('tz2', [
          ca('Timezone', tzi(-60, [10, 0, 5, 3], [3, 0, 5, 2], -60, 'W. Europe Standard Time')),
          ca('StartTime', '20261230T230000Z'),
          ca('EndTime', '20261231T230000Z'),
          ca('Subject', 'New Year'),
          ca('AllDayEvent', '1'),
        ]),
      ],
    });
    const [weeklyUid, dayUid] = responsesOf(r).map((x) => textOf(x, 'ServerId')!);
    expect((await api('GET', `/api/mail/calendar-events/${weeklyUid}`)).timeZone).toBe('America/New_York');
    const occurrences = await api(
      'GET',
      `/api/mail/calendar-events/occurrences?mailboxUid=${s.aliceBox}&from=2026-03-01T00:00:00Z&to=2026-03-20T00:00:00Z`,
    );
    expect((occurrences as Array<{ eventUid: string; start: string }>).filter((o) => o.eventUid === weeklyUid).map((o) => o.start)).toEqual(
      [
        '2026-03-02T14:00:00.000Z',
        '2026-03-09T13:00:00.000Z', // 09:00 EDT: daylight time began on 8 March
        '2026-03-16T13:00:00.000Z',
      ],
    );
    expect(await api('GET', `/api/mail/calendar-events/${dayUid}`)).toMatchObject({
      allDay: true,
      start: '2026-12-31T00:00:00.000Z',
      end: '2027-01-01T00:00:00.000Z',
      timeZone: 'UTC',
    });
  });

  it('a time shown as tentative on the device is a tentative event, and back', async () => {
    const { d, folders, sync, api } = f;
    const maybe = (busy: string) => [
      ca('StartTime', '20261210T090000Z'),
      ca('EndTime', '20261210T100000Z'),
      ca('Subject', 'Maybe'),
      ca('BusyStatus', busy),
    ];
    const r = await sync(d, folders.Calendar.id, { commands: [addItem('busy-1', maybe('1'))] });
    const uid = textOf(responsesOf(r)[0], 'ServerId')!;
    expect((await api('GET', `/api/mail/calendar-events/${uid}`)).status).toBe('tentative');
    await sync(d, folders.Calendar.id, { commands: [changeItem(uid, maybe('2'))] });
    const ev = await api('GET', `/api/mail/calendar-events/${uid}`);
    expect(ev.status).toBe('confirmed');
    await api('PUT', `/api/mail/calendar-events/${uid}`, { status: 'tentative', version: ev.version });
    const [back] = commandsOf(await sync(d, folders.Calendar.id));
    expect([back.tag, textOf(kid(back, 'ApplicationData'), 'BusyStatus')]).toEqual(['Change', '1']);
  });

  it('a modified occurrence is an Exception of its series, not an event of its own; one without its series is', async () => {
    const { s, d, d16, folders, sync, api } = f;
    const event = (body: Record<string, unknown>) => api('POST', '/api/mail/calendar-events', { mailboxUid: s.aliceBox, ...body });
    const series = await event({
      icalUid: 'series-1@example.test',
      summary: 'Weekly review',
      start: '2026-12-07T10:00:00.000Z',
      end: '2026-12-07T11:00:00.000Z',
      rrule: 'FREQ=WEEKLY;COUNT=4',
    });
    const moved = await event({
      icalUid: 'series-1@example.test',
      recurrenceId: '2026-12-14T10:00:00.000Z',
      summary: 'Weekly review (moved)',
      start: '2026-12-14T15:00:00.000Z',
      end: '2026-12-14T16:00:00.000Z',
    });
    const lone = await event({
      icalUid: 'elsewhere@example.net',
      recurrenceId: '2026-12-09T08:00:00.000Z',
      summary: 'One meeting of a series I was not invited to',
      start: '2026-12-09T08:00:00.000Z',
      end: '2026-12-09T09:00:00.000Z',
    });
    const exceptionsOf = (el: ReturnType<typeof as>) => kids(kid(kid(el, 'ApplicationData'), 'Exceptions'), 'Exception');
    const items = async (dev: typeof d) => {
      if (!f.keys[`${dev.id}:${folders.Calendar.id}`]) await sync(dev, folders.Calendar.id);
      const byId = new Map(commandsOf(await sync(dev, folders.Calendar.id)).map((c) => [textOf(c, 'ServerId')!, c]));
      return byId;
    };
    const got = await items(d);
    expect(got.has(moved.uid)).toBe(false);
    expect(got.has(lone.uid)).toBe(true);
    const [ex] = exceptionsOf(got.get(series.uid)!);
    expect([textOf(ex, 'ExceptionStartTime'), textOf(ex, 'Subject'), textOf(ex, 'StartTime'), textOf(ex, 'Deleted')]).toEqual([
      '20261214T100000Z',
      'Weekly review (moved)',
      '20261214T150000Z',
      undefined,
    ]);
    // 16.1 names the occurrence by InstanceId.
    const got16 = await items(d16);
    expect(textOf(exceptionsOf(got16.get(series.uid)!)[0], 'InstanceId')).toBe('20261214T100000Z');
    // The occurrence changes on the server: the device gets a Change of the series; cancelled, it is a deleted Exception.
    const cur = await api('GET', `/api/mail/calendar-events/${moved.uid}`);
    await api('PUT', `/api/mail/calendar-events/${moved.uid}`, { status: 'cancelled', version: cur.version });
    const changes = commandsOf(await sync(d, folders.Calendar.id));
    expect(changes.map((c) => [c.tag, textOf(c, 'ServerId')])).toEqual([['Change', series.uid]]);
    expect(textOf(exceptionsOf(changes[0])[0], 'Deleted')).toBe('1');
    // The device changes the series: the change is written and nothing comes back as a conflict.
    const r = await sync(d, folders.Calendar.id, {
      commands: [
        changeItem(series.uid, [
          ca('StartTime', '20261207T100000Z'),
          ca('EndTime', '20261207T110000Z'),
          ca('Subject', 'Weekly review (renamed)'),
          ca('Recurrence', [ca('Type', '1'), ca('Interval', '1'), ca('DayOfWeek', '2'), ca('Occurrences', '4')]),
        ]),
      ],
    });
    expect(JSON.stringify(responsesOf(r))).toBe('[]');
    expect((await api('GET', `/api/mail/calendar-events/${series.uid}`)).summary).toBe('Weekly review (renamed)');
    expect(JSON.stringify(commandsOf(await sync(d, folders.Calendar.id)))).toBe('[]');
  });

  it("a device's modified occurrence becomes a record of the series' occurrence, and reaches the other devices as an Exception", async () => {
    const { s, d, d16, folders, sync, api } = f;
    const longer = ca('Exceptions', [
      ca('Exception', [
        ca('ExceptionStartTime', '20270106T080000Z'),
        ca('Subject', 'Planning (longer)'),
        ca('StartTime', '20270106T080000Z'),
        ca('EndTime', '20270106T100000Z'),
      ]),
    ]);
    const planning = (subject: string) => [
      ca('StartTime', '20270104T080000Z'),
      ca('EndTime', '20270104T083000Z'),
      ca('Subject', subject),
      ca('Recurrence', [ca('Type', '0'), ca('Interval', '1'), ca('Occurrences', '5')]),
      longer,
    ];
    const r = await sync(d, folders.Calendar.id, {
      commands: [addItem('series-from-device', [ca('UID', 'device-series@example.org'), ...planning('Planning')])],
    });
    const uid = textOf(responsesOf(r)[0], 'ServerId')!;
    const all = (await api('GET', `/api/mail/calendar-events?mailboxUid=${s.aliceBox}&limit=500`)) as Array<Record<string, unknown>>;
    const occurrence = all.find((e) => e.icalUid === 'device-series@example.org' && e.recurrenceId);
    expect(occurrence).toMatchObject({
      recurrenceId: '2027-01-06T08:00:00.000Z',
      summary: 'Planning (longer)',
      start: '2027-01-06T08:00:00.000Z',
      end: '2027-01-06T10:00:00.000Z',
    });
    // Its own device gets nothing back; the other device gets one event with the Exception.
    expect(commandsOf(await sync(d, folders.Calendar.id))).toEqual([]);
    const other = commandsOf(await sync(d16, folders.Calendar.id)).filter(
      (c) => textOf(c, 'ServerId') === uid || textOf(c, 'ServerId') === occurrence!.uid,
    );
    expect(other.map((c) => textOf(c, 'ServerId'))).toEqual([uid]);
    const ex = kid(kid(kid(other[0], 'ApplicationData'), 'Exceptions'), 'Exception')!;
    expect([textOf(ex, 'InstanceId'), textOf(ex, 'Subject'), textOf(ex, 'EndTime')]).toEqual([
      '20270106T080000Z',
      'Planning (longer)',
      '20270106T100000Z',
    ]);
    // The same Exception sent again with a change of the series writes no new version of the occurrence.
    const again = await sync(d, folders.Calendar.id, { commands: [changeItem(uid, planning('Planning!'))] });
    expect(responsesOf(again)).toEqual([]);
    expect((await api('GET', `/api/mail/calendar-events/${String(occurrence!.uid)}`)).version).toBe(occurrence!.version);
    expect(commandsOf(await sync(d, folders.Calendar.id))).toEqual([]);
  });

  it('calendar FilterType keeps past events out; ItemOperations fetches an event', async () => {
    const { s, d, folders, device, sync, api } = f;
    const old = await api('POST', '/api/mail/calendar-events', {
      mailboxUid: s.aliceBox,
      summary: 'Long ago',
      start: '2020-01-01T10:00:00.000Z',
      end: '2020-01-01T11:00:00.000Z',
    });
    const fresh = await device('PIMF', s.alice);
    await fresh.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    await sync(fresh, folders.Calendar.id, { filterType: '4' });
    const two = commandsOf(await sync(fresh, folders.Calendar.id, { filterType: '4' })).map((x) =>
      textOf(kid(x, 'ApplicationData'), 'Subject'),
    );
    expect(two).toContain('Standup (moved)');
    expect(two).not.toContain('Long ago');
    const op = await d.send(
      'ItemOperations',
      io('ItemOperations', [io('Fetch', [io('Store', 'Mailbox'), as('CollectionId', folders.Calendar.id), as('ServerId', old.uid)])]),
    );
    const fetched = kid(kid(op.tree!, 'Response'), 'Fetch')!;
    expect(textOf(fetched, 'Status')).toBe('1');
    expect(textOf(fetched, 'Class')).toBe('Calendar');
    expect(textOf(kid(fetched, 'Properties'), 'Subject')).toBe('Long ago');
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer with no unknown tag', () => {
    const all = f.devices.flatMap((x) => x.wire);
    expect(all.length).toBeGreaterThan(30);
    expect(crossDecode(all)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
