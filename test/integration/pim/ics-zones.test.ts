// Time zones in ICS exchange (RFC 5545 3.2.19): every TZID of an export has its VTIMEZONE, and an
// import that names a Windows zone (as Outlook and Exchange write them) keeps its zone, so a series
// keeps its local time across daylight-saving changes instead of drifting as UTC.
import { readFileSync } from 'node:fs';
import ICAL from 'ical.js';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CalendarEventModel, type EventData } from '../../../lib/pim/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

/** The text/calendar part of an Outlook invitation fixture (base64 in the message). */
async function outlookIcs(file: string): Promise<string> {
  const mail = await simpleParser(
    readFileSync(new URL(`../../fixtures/invitations/${file}`, import.meta.url), 'utf8').replace(/\r?\n/g, '\r\n'),
  );
  return mail.attachments.find((a) => a.contentType === 'text/calendar')!.content.toString('utf8');
}

describe.each(backends)('ICS time zones on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('export writes a VTIMEZONE for every TZID it uses, and the instants read back through it', async () => {
    const body = (start: string, end: string, timeZone: string, summary: string) => ({
      mailboxUid: p.aliceBox.uid,
      summary,
      start,
      end,
      timeZone,
    });
    for (const b of [
      body('2026-07-01T07:00:00.000Z', '2026-07-01T08:00:00.000Z', 'Europe/Berlin', 'summer in Berlin'),
      body('2026-12-01T08:00:00.000Z', '2026-12-01T09:00:00.000Z', 'Europe/Berlin', 'winter in Berlin'),
      body('2026-07-01T13:00:00.000Z', '2026-07-01T14:00:00.000Z', 'America/New_York', 'New York'),
      body('2026-07-01T10:00:00.000Z', '2026-07-01T11:00:00.000Z', 'UTC', 'UTC'),
    ])
      expect((await api.call('POST', '/api/mail/calendar-events', { token: p.alice, body: b })).status).toBe(201);
    const r = await api.call('GET', `/api/mail/calendar-events/export?mailboxUid=${p.aliceBox.uid}`, { token: p.alice });
    expect(r.status).toBe(200);
    const cal = new ICAL.Component(ICAL.parse(r.body as string));
    const zones = cal.getAllSubcomponents('vtimezone').map((z) => z.getFirstPropertyValue('tzid'));
    expect(zones.sort()).toEqual(['America/New_York', 'Europe/Berlin']);
    const tzids = cal
      .getAllSubcomponents('vevent')
      .flatMap((v) => v.getAllProperties().map((x) => x.getParameter('tzid')))
      .filter(Boolean);
    expect(new Set(tzids)).toEqual(new Set(zones));
    // An independent reader resolves each TZID through the VTIMEZONE of this file (no zone database).
    const got = Object.fromEntries(
      cal
        .getAllSubcomponents('vevent')
        .map((v) => [v.getFirstPropertyValue('summary'), (v.getFirstPropertyValue('dtstart') as ICAL.Time).toJSDate().toISOString()]),
    );
    expect(got).toEqual({
      'summer in Berlin': '2026-07-01T07:00:00.000Z',
      'winter in Berlin': '2026-12-01T08:00:00.000Z',
      'New York': '2026-07-01T13:00:00.000Z',
      UTC: '2026-07-01T10:00:00.000Z',
    });
  });

  it('import maps Outlook\'s "W. Europe Standard Time" to Europe/Berlin, so the series does not drift across DST', async () => {
    const ics = await outlookIcs('outlook-recurring.eml');
    expect(ics).toContain('DTSTART;TZID=W. Europe Standard Time:20270302T093000');
    const imp = await api.call('POST', `/api/mail/calendar-events/import?mailboxUid=${p.bobBox.uid}`, {
      token: p.bob,
      body: ics,
      headers: { 'content-type': 'text/calendar' },
    });
    expect(imp.status).toBe(200);
    expect(imp.body).toMatchObject({ imported: 2, failed: 0 });
    const stored = await api.deps.store
      .repo<EventData & { mailboxUid: string }>(CalendarEventModel)
      .list({ filter: { mailboxUid: p.bobBox.uid } });
    expect(stored.map((e) => e.timeZone)).toEqual(['Europe/Berlin', 'Europe/Berlin']);
    const occ = await api.call(
      'GET',
      `/api/mail/calendar-events/occurrences?mailboxUid=${p.bobBox.uid}&from=2027-03-20T00:00:00Z&to=2027-04-10T00:00:00Z`,
      { token: p.bob },
    );
    // 09:30 in Berlin on both sides of 28 March 2027: 08:30Z before, 07:30Z after.
    expect(occ.body.map((o: { start: string }) => o.start)).toEqual([
      '2027-03-24T10:00:00.000Z',
      '2027-03-30T07:30:00.000Z',
      '2027-04-06T07:30:00.000Z',
    ]);
    // And it leaves again with an IANA TZID and its VTIMEZONE.
    const out = new ICAL.Component(
      ICAL.parse((await api.call('GET', `/api/mail/calendar-events/export?mailboxUid=${p.bobBox.uid}`, { token: p.bob })).body as string),
    );
    expect(out.getAllSubcomponents('vtimezone').map((z) => z.getFirstPropertyValue('tzid'))).toEqual(['Europe/Berlin']);
  });
});
