// Meeting invitations end to end: real clients' invitations (test/fixtures/invitations) handed in
// through POST /internal/mta/deliver, delivered by the scan job with real rspamd and clamd, landing
// in the calendar; the answer leaves as an iTIP REPLY through the outbound hand-off and the send
// job into a sendmail-compatible recorder, and is read back with ical.js.
import { copyFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import ICAL from 'ical.js';
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, InvitationModel, OutboundHandoffModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { drainSends } from '../../../lib/jobs/send.js';
import { CalendarEventModel, type EventData } from '../../../lib/pim/index.js';
import { sendDepsOf } from '../../../lib/send/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requireScanners, startScanners, type Scanners } from '../../helpers/scanners.js';
import { ingestFixture, type IngestFixture } from '../ingest/setup.js';

const withScanners = requireScanners();
const backends = await sqlBackends();
let scanners: Scanners;
beforeAll(async () => {
  if (!withScanners) return;
  scanners = await startScanners();
}, 150_000);
afterAll(async () => scanners?.stop());

/** A fixture as it travels over SMTP (stored with LF line ends). */
const fixture = (name: string) =>
  readFileSync(new URL(`../../fixtures/invitations/${name}`, import.meta.url), 'utf8').replace(/\r?\n/g, '\r\n');
const withFrom = (raw: string, from: string) => raw.replace(/^From: .*$/m, `From: ${from}`);
const UID = {
  thunderbird: '8f0c5b2e-3c7d-4e1a-9b6f-2a4d7e9c1f03',
  outlook: '040000008200E00074C5B7101A82E00800000000D0A1E4C2F3B8DC01000000000000000010000000F4E9A1C0B2D73E4A8B6C5D4E3F2A1B0C',
  series: '040000008200E00074C5B7101A82E00800000000A1B2C3D4E5F6DC01000000000000000010000000C0FFEE00112233445566778899AABBCC',
  google: '5qv8l1c0t2j3m4n6o7p9r0s1t2@google.com',
  booking: 'booking-20270105-0930-7731@booking.example',
  reply: '2b7e6c1a-0d3f-4e5a-9b8c-7d6e5f4a3b2c@svcmail',
};

type Stored = EventData & { uid: string; version: number; mailboxUid: string };
const iso = (d: unknown) => new Date(d as string).toISOString();

describe.runIf(withScanners).each(backends)('meeting invitations ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  let recDir: string;
  let binDir: string;
  let n = 0;
  const events = (mailboxUid: string, icalUid: string) =>
    f.api.deps.store.repo<Stored>(CalendarEventModel).list({ filter: { mailboxUid, icalUid }, sort: [{ field: 'start', dir: 'asc' }] });
  const invitations = (mailboxUid: string) =>
    f.api.deps.store
      .repo<{ icalUid: string; processed: boolean; outcome: string; method: string }>(InvitationModel)
      .list({ filter: { mailboxUid } });
  /** Hands the message in as the MTA does, runs the scan job, answers the entry. */
  const deliver = async (raw: string, opts: { to?: string; from?: string; worker?: WorkerDeps } = {}) => {
    // The envelope sender is the author's address, as the clients' own submission servers set it.
    const author = /^From:.*?<?([^<>\s]+@[^<>\s]+?)>?\r?$/m.exec(raw)![1];
    const r = await f.deliver({ from: opts.from ?? author, to: [opts.to ?? 'alice@example.test'], raw, tx: `inv-${backend.name}-${n++}` });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await drainQueue(opts.worker ?? w, 'test-worker');
    const [entry] = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: r.body.transactionId } });
    expect(entry.state, JSON.stringify(entry.verdict)).toBe('delivered');
    return entry;
  };
  const recorded = () =>
    readdirSync(recDir)
      .filter((x) => x.endsWith('.args'))
      .sort()
      .map((x) => ({
        args: readFileSync(join(recDir, x), 'utf8').trim().split('\n'),
        eml: readFileSync(join(recDir, x.replace('.args', '.eml'))),
      }));

  beforeAll(async () => {
    binDir = mkdtempSync(join(tmpdir(), 'svcmail-inv-bin-'));
    recDir = mkdtempSync(join(tmpdir(), 'svcmail-inv-rec-'));
    copyFileSync(new URL('../../fixtures/sendmail-recorder.sh', import.meta.url), join(binDir, 'sendmail'));
    writeFileSync(join(binDir, 'recorder-dir'), recDir);
    f = await ingestFixture(backend, {
      'mail:transport:sendmail:path': join(binDir, 'sendmail'),
      'mail:transport:sendmail:log_path': join(recDir, 'maillog'),
    });
    w = f.worker({
      env: 'production',
      values: { 'mail:scan:rspamd:url': scanners.rspamdUrl, 'mail:scan:clamd:address': scanners.clamdAddress },
    });
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    rmSync(binDir, { recursive: true, force: true });
    rmSync(recDir, { recursive: true, force: true });
  });

  it.each([
    [
      'Thunderbird (Lightning)',
      'thunderbird-request.eml',
      UID.thunderbird,
      {
        summary: 'Project kickoff',
        start: '2026-12-10T15:00:00.000Z',
        end: '2026-12-10T16:30:00.000Z',
        timeZone: 'America/New_York',
        organizer: 'carol@example.org',
        attendees: ['carol@example.org:accepted', 'alice@example.test:needs-action', 'dave@example.net:needs-action'],
        reminders: [15],
      },
    ],
    [
      'Outlook (Windows zone name, X-MICROSOFT-CDO)',
      'outlook-request.eml',
      UID.outlook,
      {
        summary: 'Quarterly review',
        start: '2026-12-15T13:00:00.000Z',
        end: '2026-12-15T14:30:00.000Z',
        timeZone: 'Europe/Berlin',
        organizer: 'erik@contoso.example',
        attendees: ['alice@example.test:needs-action', 'frank@contoso.example:needs-action'],
        reminders: [15],
      },
    ],
    [
      'Google Calendar (UTC times, invite.ics twice)',
      'google-request.eml',
      UID.google,
      {
        summary: 'Design review',
        start: '2026-12-08T15:00:00.000Z',
        end: '2026-12-08T15:45:00.000Z',
        timeZone: 'UTC',
        organizer: 'gina.organizer@example.com',
        attendees: ['gina.organizer@example.com:accepted', 'alice@example.test:needs-action'],
        reminders: [30],
      },
    ],
    [
      'a booking system (.ics attachment only, DURATION)',
      'attachment-only-request.eml',
      UID.booking,
      {
        summary: 'Dentist appointment',
        start: '2027-01-05T09:30:00.000Z',
        end: '2027-01-05T10:15:00.000Z',
        timeZone: 'Europe/London',
        organizer: 'appointments@booking.example',
        attendees: ['alice@example.test:needs-action'],
        reminders: [],
      },
    ],
  ])('an invitation from %s lands as a tentative event', async (_client, file, icalUid, want) => {
    const entry = await deliver(fixture(file));
    expect(entry.messageUid).toBeTruthy(); // the mail itself is filed too
    const [ev, ...more] = await events(f.users.aliceBox.uid, icalUid);
    expect(more).toHaveLength(0);
    expect({
      summary: ev.summary,
      start: iso(ev.start),
      end: iso(ev.end),
      timeZone: ev.timeZone,
      organizer: ev.organizer?.email,
      attendees: ev.attendees.map((a) => `${a.email}:${a.partstat}`),
      reminders: ev.reminders.map((r) => r.minutesBefore),
    }).toEqual(want);
    expect(ev).toMatchObject({ status: 'tentative', sequence: 0, recurrenceId: null, allDay: false });
    const [inv] = (await invitations(f.users.aliceBox.uid)).filter((i) => i.icalUid === icalUid);
    expect(inv).toMatchObject({ method: 'REQUEST', processed: true, outcome: 'created' });
  });

  it('an Outlook series with an exception keeps its local time across DST (Windows zone mapped to Europe/Berlin)', async () => {
    await deliver(fixture('outlook-recurring.eml'));
    const [master, moved] = await events(f.users.aliceBox.uid, UID.series);
    expect(master).toMatchObject({ timeZone: 'Europe/Berlin', status: 'tentative', recurrenceId: null });
    expect(master.rrule).toMatch(/FREQ=WEEKLY/);
    expect(master.exdates.map(iso)).toEqual(['2027-03-16T08:30:00.000Z']);
    expect(iso(moved.recurrenceId)).toBe('2027-03-23T08:30:00.000Z');
    expect(iso(moved.start)).toBe('2027-03-24T10:00:00.000Z');
    const occ = await f.api.call(
      'GET',
      `/api/mail/calendar-events/occurrences?mailboxUid=${f.users.aliceBox.uid}&from=2027-03-01T00:00:00Z&to=2027-05-01T00:00:00Z`,
      { token: f.users.alice },
    );
    expect(occ.status).toBe(200);
    expect(occ.body.map((o: { start: string; summary: string }) => `${o.start} ${o.summary}`)).toEqual([
      '2027-03-02T08:30:00.000Z Team sync', // 09:30 CET
      '2027-03-09T08:30:00.000Z Team sync', // the 16th is excluded, the 23rd moved
      '2027-03-24T10:00:00.000Z Team sync (moved)',
      '2027-03-30T07:30:00.000Z Team sync', // 09:30 CEST after 28 March
      '2027-04-06T07:30:00.000Z Team sync',
      '2027-04-13T07:30:00.000Z Team sync', // UNTIL is a UTC time: the last one is kept
    ]);
  });

  it('an Outlook CANCEL of one occurrence removes only that occurrence', async () => {
    await deliver(fixture('outlook-cancel-occurrence.eml'));
    const [master] = await events(f.users.aliceBox.uid, UID.series);
    expect(master.exdates.map(iso)).toEqual(['2027-03-16T08:30:00.000Z', '2027-04-06T07:30:00.000Z']);
    expect(master.status).toBe('tentative');
    const occ = await f.api.call(
      'GET',
      `/api/mail/calendar-events/occurrences?mailboxUid=${f.users.aliceBox.uid}&from=2027-04-01T00:00:00Z&to=2027-05-01T00:00:00Z`,
      { token: f.users.alice },
    );
    expect(occ.body.map((o: { start: string }) => o.start)).toEqual(['2027-04-13T07:30:00.000Z']);
  });

  it('answering sends a well-formed iTIP REPLY to the organizer through the outbound path', async () => {
    const [ev] = await events(f.users.aliceBox.uid, UID.thunderbird);
    const r = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, {
      token: f.users.alice,
      body: { response: 'accepted', comment: 'Count me in.' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ uid: ev.uid, status: 'confirmed', sequence: 0 });
    const stored = (await events(f.users.aliceBox.uid, UID.thunderbird))[0];
    expect(stored.attendees.map((a) => `${a.email}:${a.partstat}`)).toEqual([
      'carol@example.org:accepted',
      'alice@example.test:accepted',
      'dave@example.net:needs-action',
    ]);
    expect(stored.status).toBe('confirmed');
    const [handoff] = await f.api.deps.store
      .repo<{ kind: string; envelopeFrom: string; envelopeTo: string[]; state: string }>(OutboundHandoffModel)
      .list({ filter: { kind: 'itip-reply' } });
    expect(handoff).toMatchObject({ envelopeFrom: 'alice@example.test', envelopeTo: ['carol@example.org'], state: 'queued' });

    // The send job adopts the hand-off and gives it to the transport (here: the sendmail recorder).
    const round = await drainSends(sendDepsOf(f.api.deps), 'test-sender');
    expect(round.sent).toBeGreaterThanOrEqual(1);
    const runs = recorded();
    expect(runs).toHaveLength(1);
    expect(runs[0].args).toEqual(['-i', '-f', 'alice@example.test', '--', 'carol@example.org']);
    const mail = await simpleParser(runs[0].eml);
    expect(mail.subject).toBe('Accepted: Project kickoff');
    expect(mail.from?.value[0].address).toBe('alice@example.test');
    expect(mail.to && !Array.isArray(mail.to) ? mail.to.value[0].address : null).toBe('carol@example.org');
    expect(runs[0].eml.toString('latin1')).toMatch(/^Content-Type: multipart\/alternative/im);
    const part = mail.attachments.find((a) => a.contentType === 'text/calendar')!;
    expect((part.headers.get('content-type') as { params: Record<string, string> }).params.method).toBe('REPLY');
    const cal = new ICAL.Component(ICAL.parse(part.content.toString('utf8')));
    expect(cal.getFirstPropertyValue('method')).toBe('REPLY');
    expect(cal.getFirstPropertyValue('version')).toBe('2.0');
    const vevent = cal.getFirstSubcomponent('vevent')!;
    expect(vevent.getFirstPropertyValue('uid')).toBe(UID.thunderbird);
    expect(vevent.getFirstPropertyValue('sequence')).toBe(0);
    expect(vevent.getFirstPropertyValue('organizer')).toBe('mailto:carol@example.org');
    expect(vevent.getFirstPropertyValue('comment')).toBe('Count me in.');
    const attendees = vevent.getAllProperties('attendee');
    expect(attendees).toHaveLength(1);
    expect(attendees[0].getFirstValue()).toBe('mailto:alice@example.test');
    expect(attendees[0].getParameter('partstat')).toBe('ACCEPTED');
    // The times travel with their zone: DTSTART has a TZID and the VCALENDAR its VTIMEZONE.
    const dtstart = vevent.getFirstProperty('dtstart')!;
    expect(dtstart.getParameter('tzid')).toBe('America/New_York');
    expect((dtstart.getFirstValue() as ICAL.Time).toJSDate().toISOString()).toBe('2026-12-10T15:00:00.000Z');
  });

  it('delivering the same invitation twice changes nothing and keeps the answer', async () => {
    const before = (await events(f.users.aliceBox.uid, UID.thunderbird))[0];
    await deliver(fixture('thunderbird-request.eml'));
    const after = await events(f.users.aliceBox.uid, UID.thunderbird);
    expect(after).toHaveLength(1);
    expect(after[0].version).toBe(before.version);
    expect(after[0].attendees.find((a) => a.email === 'alice@example.test')?.partstat).toBe('accepted');
    expect((await invitations(f.users.aliceBox.uid)).filter((i) => i.icalUid === UID.thunderbird).map((i) => i.outcome)).toEqual(
      expect.arrayContaining(['created', 'unchanged']),
    );
  });

  it('another user and an elevated administrator get 404 on respond; a bad answer is api-106', async () => {
    const [ev] = await events(f.users.aliceBox.uid, UID.outlook);
    for (const token of [f.users.bob, f.users.admin]) {
      const r = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, { token, body: { response: 'declined' } });
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('api-107');
    }
    const bad = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, {
      token: f.users.alice,
      body: { response: 'maybe' },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('api-106');
    expect((await events(f.users.aliceBox.uid, UID.outlook))[0]).toMatchObject({ version: ev.version, status: 'tentative' });
    expect(await f.api.deps.store.repo(OutboundHandoffModel).count({ kind: 'itip-reply' })).toBe(1);
  });

  it('a share with read only is 403 api-102; a share with write answers for the mailbox', async () => {
    const [ev] = await events(f.users.aliceBox.uid, UID.outlook);
    const grant = await f.api.call('POST', '/api/acls', {
      token: f.users.alice,
      body: { resource: 'mailboxes', resourceUid: f.users.aliceBox.uid, subject: 'user:bob', rights: ['read'] },
    });
    expect(grant.status, JSON.stringify(grant.body)).toBe(201);
    const readOnly = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, {
      token: f.users.bob,
      body: { response: 'tentative' },
    });
    expect(readOnly.status).toBe(403);
    expect(readOnly.body.code).toBe('api-102');
    const upgraded = await f.api.call('PUT', `/api/acls/${grant.body.uid}`, {
      token: f.users.alice,
      body: { version: grant.body.version, rights: ['read', 'write'] },
    });
    expect(upgraded.status, JSON.stringify(upgraded.body)).toBe(200);
    const r = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, {
      token: f.users.bob,
      body: { response: 'tentative' },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect((await events(f.users.aliceBox.uid, UID.outlook))[0].attendees.map((a) => `${a.email}:${a.partstat}`)).toEqual([
      'alice@example.test:tentative',
      'frank@contoso.example:needs-action',
    ]);
    const replies = await f.api.deps.store
      .repo<{ envelopeFrom: string; envelopeTo: string[] }>(OutboundHandoffModel)
      .list({ filter: { kind: 'itip-reply' }, sort: [{ field: 'createdAt', dir: 'asc' }] });
    expect(replies.map((h) => `${h.envelopeFrom}>${h.envelopeTo.join(',')}`)).toEqual([
      'alice@example.test>carol@example.org',
      'alice@example.test>erik@contoso.example',
    ]);
    await f.api.call('DELETE', `/api/acls/${grant.body.uid}?version=${upgraded.body.version}`, { token: f.users.alice });
  });

  it('a Thunderbird CANCEL cancels the event', async () => {
    await deliver(fixture('thunderbird-cancel.eml'));
    const [ev] = await events(f.users.aliceBox.uid, UID.thunderbird);
    expect(ev).toMatchObject({ status: 'cancelled', sequence: 1 });
    const refused = await f.api.call('POST', `/api/mail/calendar-events/${ev.uid}/respond`, {
      token: f.users.alice,
      body: { response: 'accepted' },
    });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('api-120');
  });

  it("a REPLY updates the attendee on the organizer's event, only when it comes from that attendee", async () => {
    const created = await f.api.call('POST', '/api/mail/calendar-events', {
      token: f.users.alice,
      body: {
        mailboxUid: f.users.aliceBox.uid,
        icalUid: UID.reply,
        summary: 'Budget planning',
        start: '2026-12-17T09:00:00.000Z',
        end: '2026-12-17T10:00:00.000Z',
        timeZone: 'Europe/Berlin',
        organizer: { email: 'alice@example.test' },
        attendees: [{ email: 'dave@example.net', name: 'Dave Attendee' }, { email: 'erin@example.net' }],
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const partstats = async () => (await events(f.users.aliceBox.uid, UID.reply))[0].attendees.map((a) => `${a.email}:${a.partstat}`);
    await deliver(withFrom(fixture('outlook-reply.eml'), 'Erin <erin@example.net>'), { from: 'erin@example.net' });
    expect(await partstats()).toEqual(['dave@example.net:needs-action', 'erin@example.net:needs-action']);
    expect((await invitations(f.users.aliceBox.uid)).find((i) => i.icalUid === UID.reply)).toMatchObject({
      method: 'REPLY',
      processed: false,
      outcome: expect.stringMatching(/does not come from the attendee/),
    });
    await deliver(fixture('outlook-reply.eml'), { from: 'dave@example.net' });
    expect(await partstats()).toEqual(['dave@example.net:accepted', 'erin@example.net:needs-action']);
  });

  it('a forwarded invitation is refused from an unverified sender and applied from a verified one', async () => {
    const forwarded = withFrom(fixture('google-request.eml'), 'Mallory <mallory@remote.example>');
    const entry = await deliver(forwarded, { to: 'bob@example.test', from: 'mallory@remote.example' });
    expect(entry.messageUid).toBeTruthy(); // still filed
    expect(await events(f.users.bobBox.uid, UID.google)).toHaveLength(0);
    expect((await invitations(f.users.bobBox.uid))[0]).toMatchObject({
      processed: false,
      outcome: expect.stringMatching(/forwarded invitation from an unverified sender/),
    });

    // Spec: Trusting sender verification — the trusted Authentication-Results header verifies the forwarder.
    const trusting = f.worker({
      env: 'production',
      values: {
        'mail:scan:rspamd:url': scanners.rspamdUrl,
        'mail:scan:clamd:address': scanners.clamdAddress,
        'mail:security:trusted_authserv_id': 'mx.example.test',
      },
    });
    const verified = `Authentication-Results: mx.example.test; dkim=pass header.d=remote.example; dmarc=pass header.from=remote.example\r\n${forwarded}`;
    await deliver(verified, { to: 'bob@example.test', from: 'mallory@remote.example', worker: trusting });
    const [ev] = await events(f.users.bobBox.uid, UID.google);
    expect(ev).toMatchObject({ status: 'tentative', summary: 'Design review' });
  });
});
