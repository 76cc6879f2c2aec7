import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

// A weekly 09:00 Berlin meeting across the end of daylight saving (25 Oct 2026): 07:00Z before, 08:00Z after.
const weekly = {
  summary: 'Standup',
  start: '2026-10-12T07:00:00.000Z',
  end: '2026-10-12T07:30:00.000Z',
  timeZone: 'Europe/Berlin',
  rrule: 'FREQ=WEEKLY;COUNT=5',
  attendees: [{ email: 'bob@example.test', name: 'Bob', partstat: 'needs-action' }],
  reminders: [{ minutesBefore: 15 }],
};

describe.each(backends)('calendar events on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let eventUid: string;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  const occ = (token: string, mailboxUid: string) =>
    api.call('GET', `/api/mail/calendar-events/occurrences?mailboxUid=${mailboxUid}&from=2026-10-01T00:00:00Z&to=2026-12-01T00:00:00Z`, {
      token,
    });

  it('expands a weekly rule on the wall clock of its zone, with an exclusion and a moved exception', async () => {
    const created = await api.call('POST', '/api/mail/calendar-events', {
      token: p.alice,
      body: { ...weekly, mailboxUid: p.aliceBox.uid, exdates: ['2026-10-19T07:00:00.000Z'] },
    });
    expect(created.status).toBe(201);
    eventUid = created.body.uid;
    expect(created.body.icalUid).toMatch(/@svcmail$/);
    const exception = await api.call('POST', '/api/mail/calendar-events', {
      token: p.alice,
      body: {
        summary: 'Standup (moved)',
        mailboxUid: p.aliceBox.uid,
        icalUid: created.body.icalUid,
        recurrenceId: '2026-11-02T08:00:00.000Z',
        start: '2026-11-02T09:00:00.000Z',
        end: '2026-11-02T09:30:00.000Z',
        timeZone: 'Europe/Berlin',
      },
    });
    expect(exception.status).toBe(201);
    const r = await occ(p.alice, p.aliceBox.uid);
    expect(r.status).toBe(200);
    expect(r.body.map((o: { start: string; summary: string }) => `${o.start} ${o.summary}`)).toEqual([
      '2026-10-12T07:00:00.000Z Standup', // 09:00 CEST
      '2026-10-26T08:00:00.000Z Standup', // 09:00 CET, after the change; the 19th is excluded
      '2026-11-02T09:00:00.000Z Standup (moved)',
      '2026-11-09T08:00:00.000Z Standup',
    ]);
  });

  it('exports iCalendar that an independent parse reads back with rule, exclusion, exception, attendee and alarm', async () => {
    const r = await api.call('GET', `/api/mail/calendar-events/export?mailboxUid=${p.aliceBox.uid}`, { token: p.alice });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/calendar/);
    const cal = new ICAL.Component(ICAL.parse(r.body as string));
    const [master, moved] = cal.getAllSubcomponents('vevent');
    expect(master.getFirstPropertyValue('rrule')!.toString()).toBe('FREQ=WEEKLY;COUNT=5');
    expect(master.getFirstProperty('dtstart')!.getParameter('tzid')).toBe('Europe/Berlin');
    expect((master.getFirstPropertyValue('dtstart') as ICAL.Time).toString()).toBe('2026-10-12T09:00:00');
    expect(master.getAllProperties('exdate')).toHaveLength(1);
    expect(master.getFirstProperty('attendee')!.getParameter('partstat')).toBe('NEEDS-ACTION');
    expect(master.getFirstSubcomponent('valarm')!.getFirstPropertyValue('trigger')!.toString()).toBe('-PT15M');
    expect(moved.getFirstProperty('recurrence-id')).toBeTruthy();
    expect(moved.getFirstPropertyValue('uid')).toBe(master.getFirstPropertyValue('uid'));
  });

  it('imports its own export into another mailbox with the same occurrences', async () => {
    const ics = (await api.call('GET', `/api/mail/calendar-events/export?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body as string;
    const imp = await api.call('POST', `/api/mail/calendar-events/import?mailboxUid=${p.bobBox.uid}`, {
      token: p.bob,
      body: ics,
      headers: { 'content-type': 'text/calendar' },
    });
    expect(imp.status).toBe(200);
    expect(imp.body).toMatchObject({ imported: 2, failed: 0 });
    const mine = (await occ(p.alice, p.aliceBox.uid)).body.map((o: { start: string }) => o.start);
    const theirs = (await occ(p.bob, p.bobBox.uid)).body.map((o: { start: string }) => o.start);
    expect(theirs).toEqual(mine);
  });

  it('bumps SEQUENCE when the time changes, not when only the title does', async () => {
    const cur = (await api.call('GET', `/api/mail/calendar-events/${eventUid}`, { token: p.alice })).body;
    const renamed = await api.call('PUT', `/api/mail/calendar-events/${eventUid}`, {
      token: p.alice,
      body: { version: cur.version, summary: 'Daily standup' },
    });
    expect(renamed.body.sequence).toBe(cur.sequence);
    const moved = await api.call('PUT', `/api/mail/calendar-events/${eventUid}`, {
      token: p.alice,
      body: { version: renamed.body.version, location: 'Room 2' },
    });
    expect(moved.body.sequence).toBe(cur.sequence + 1);
  });

  it.each([
    ['a bad rule', { rrule: 'EVERY TUESDAY' }],
    ['an unknown zone', { timeZone: 'Mars/Olympus' }],
    ['an end before the start', { end: '2026-10-12T06:00:00.000Z' }],
  ])('refuses %s with api-106', async (_what, change) => {
    const r = await api.call('POST', '/api/mail/calendar-events', {
      token: p.alice,
      body: { ...weekly, mailboxUid: p.aliceBox.uid, ...change },
    });
    expect(r.status).toBe(400);
    expect(r.body.code).toBe('api-106');
  });

  it('answers 404 to another user and to an elevated administrator on every calendar route of the mailbox', async () => {
    for (const token of [p.bob, p.admin]) {
      expect((await api.call('GET', `/api/mail/calendar-events/${eventUid}`, { token })).status).toBe(404);
      expect((await api.call('GET', `/api/mail/calendar-events?mailboxUid=${p.aliceBox.uid}`, { token })).status).toBe(404);
      expect((await occ(token, p.aliceBox.uid)).status).toBe(404);
      expect((await api.call('GET', `/api/mail/calendar-events/export?mailboxUid=${p.aliceBox.uid}`, { token })).status).toBe(404);
      expect(
        (
          await api.call('POST', `/api/mail/calendar-events/import?mailboxUid=${p.aliceBox.uid}`, {
            token,
            body: 'BEGIN:VCALENDAR\r\nEND:VCALENDAR\r\n',
            headers: { 'content-type': 'text/calendar' },
          })
        ).status,
      ).toBe(404);
      expect((await api.call('POST', '/api/mail/calendar-share-links', { token, body: { mailboxUid: p.aliceBox.uid } })).status).toBe(404);
    }
  });

  it('serves a share link without sign-in, hides attendees, and stops after revocation', async () => {
    const link = await api.call('POST', '/api/mail/calendar-share-links', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'Alice public' },
    });
    expect(link.status).toBe(201);
    expect(link.body.token).toMatch(/^[\w-]{43}$/);
    const feed = await api.call('GET', link.body.path);
    expect(feed.status).toBe(200);
    expect(feed.body).toContain('BEGIN:VEVENT');
    expect(feed.body).not.toContain('bob@example.test');
    const revoked = await api.call('PUT', `/api/mail/calendar-share-links/${link.body.uid}`, {
      token: p.alice,
      body: { version: link.body.version, revoked: true },
    });
    expect(revoked.status).toBe(200);
    expect((await api.call('GET', link.body.path)).status).toBe(404);
    expect((await api.call('GET', '/api/mail/calendar-share-links/feed/not-a-token')).status).toBe(404);
  });
});
