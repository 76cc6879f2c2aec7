// The personal-information views of the web app in Chromium against the API: calendar (month and
// week, an event made, changed and deleted, an invitation accepted), contacts and contact lists,
// tasks (a first list made for the user, a task done), notes; each view is reached by its #link and
// stays after a reload; axe-core finds nothing serious on any of them.
import { mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { axeFindings, launchChromium, signedInContext, watchProblems } from '../../helpers/browser.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms } from '../../helpers/peers.js';

const haveBrowser = requirePrograms('chromium');
const [sqlite] = await sqlBackends();

describe.runIf(haveBrowser)('calendar, contacts, tasks and notes in the web app', () => {
  let api: TestApi;
  let browser: Browser;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const list = async (path: string) =>
    (await api.call('GET', `/api/mail/${path}?mailboxUid=${p.aliceBox.uid}&limit=1000`, { token: p.alice })).body;

  beforeAll(async () => {
    [api, browser] = await Promise.all([startTestApi(sqlite), launchChromium()]);
    p = await seedUsers(api);
  }, 120_000);
  afterAll(async () => {
    await browser?.close();
    await api?.close();
  });

  const open = async (view: string, opts: { bypassCSP?: boolean } = {}): Promise<{ tab: Page; problems: string[] }> => {
    const tab = await (await signedInContext(browser, api.url, p.alice, opts)).newPage();
    // This API runs without the push daemon: the mail view's /push socket is refused, and the page carries on.
    const problems = watchProblems(tab, { ignore: /\/push' failed/ });
    await tab.goto(`${api.url}/#${view}`);
    await tab.getByRole('navigation', { name: 'Views' }).waitFor();
    return { tab, problems };
  };

  it('calendar: an event made in the month view, changed, seen in the week view, deleted; an invitation accepted', async () => {
    const { tab, problems } = await open('calendar');
    const calendar = tab.getByRole('region', { name: 'Calendar' });
    await calendar.getByRole('button', { name: 'New event', exact: true }).click();
    const form = tab.getByRole('form', { name: 'New event' });
    await form.getByLabel('Title').fill('Dentist');
    await form.getByRole('button', { name: 'Save event' }).click();
    const chip = calendar.getByRole('button', { name: /Dentist/ });
    await chip.waitFor();
    await chip.click();
    const editor = tab.getByRole('form', { name: 'Event' });
    await expect.poll(() => editor.getByLabel('Title').inputValue()).toBe('Dentist');
    await editor.getByLabel('Where').fill('Main Street 1');
    await editor.getByRole('button', { name: 'Save event' }).click();
    await expect.poll(async () => (await list('calendar-events')).map((e: { location: string }) => e.location)).toEqual(['Main Street 1']);
    await calendar.getByLabel('Show').selectOption('week');
    // On the week's hour grid the 9:00 event sits at 9/24 of its day's column.
    const placed = calendar.getByRole('button', { name: /Dentist/ });
    await placed.waitFor();
    expect(await placed.evaluate((el) => (el as unknown as { style: { top: string } }).style.top)).toBe('37.5%');
    await placed.click();
    tab.once('dialog', (d) => void d.accept());
    await tab.getByRole('form', { name: 'Event' }).getByRole('button', { name: 'Delete event' }).click();
    await expect.poll(async () => (await list('calendar-events')).length).toBe(0);
    // The day view: a click on 14:00 starts an event there.
    await calendar.getByLabel('Show').selectOption('day');
    await calendar.locator('.hour-column .hour-slots button').nth(14).click();
    const call = tab.getByRole('form', { name: 'New event' });
    expect(await call.getByLabel('Starts').inputValue()).toMatch(/T14:00$/);
    await call.getByLabel('Title').fill('Call');
    await call.getByRole('button', { name: 'Save event' }).click();
    await calendar.getByRole('button', { name: /Call/ }).waitFor();
    const [made14] = await list('calendar-events');
    expect(new Date(made14.start).getHours()).toBe(14);
    expect(
      (await api.call('DELETE', `/api/mail/calendar-events/${made14.uid}`, { token: p.alice, body: { version: made14.version } })).status,
    ).toBe(204);

    // an invitation from outside, not answered yet
    const start = new Date(Date.now() + 86_400_000);
    const made = await api.call('POST', '/api/mail/calendar-events', {
      token: p.alice,
      body: {
        mailboxUid: p.aliceBox.uid,
        summary: 'Budget review',
        start: start.toISOString(),
        end: new Date(start.getTime() + 3600_000).toISOString(),
        organizer: { email: 'carol@example.net', name: 'Carol' },
        attendees: [{ email: 'alice@example.test' }],
      },
    });
    expect(made.status).toBe(201);
    await tab.reload();
    const invitations = tab.getByRole('region', { name: 'Invitations' });
    await invitations.getByText('Budget review').waitFor();
    await invitations.getByRole('button', { name: 'Accept' }).click();
    await expect
      .poll(
        async () => (await api.call('GET', `/api/mail/calendar-events/${made.body.uid}`, { token: p.alice })).body.attendees[0].partstat,
      )
      .toBe('accepted');
    await expect.poll(() => invitations.count()).toBe(0);
    expect(problems).toEqual([]);
  });

  it('a repeating event: one occurrence changed alone, one deleted alone, the series changed; calendar and contacts imported and exported', async () => {
    const tomorrow = new Date();
    tomorrow.setDate(tomorrow.getDate() + 1);
    tomorrow.setHours(10, 0, 0, 0);
    const day = (n: number) => new Date(tomorrow.getTime() + n * 86_400_000);
    const made = await api.call('POST', '/api/mail/calendar-events', {
      token: p.alice,
      body: {
        mailboxUid: p.aliceBox.uid,
        summary: 'Standup',
        start: tomorrow.toISOString(),
        end: new Date(tomorrow.getTime() + 900_000).toISOString(),
        timeZone: Intl.DateTimeFormat().resolvedOptions().timeZone,
        rrule: 'FREQ=DAILY;COUNT=3',
      },
    });
    expect(made.status).toBe(201);
    const { tab, problems } = await open('calendar');
    const calendar = tab.getByRole('region', { name: 'Calendar' });
    await calendar.getByLabel('Show').selectOption('day');
    const next = () => calendar.getByRole('button', { name: 'Next' }).click();
    const editor = tab.getByRole('form', { name: 'Event' });
    // The second occurrence, moved to 11:00 and renamed — that one alone.
    await next();
    await next();
    await calendar.getByRole('button', { name: /Standup/ }).click();
    expect(await editor.getByLabel('This occurrence').isChecked()).toBe(true);
    expect(await editor.getByLabel('Starts').inputValue()).toMatch(/T10:00$/);
    await editor.getByLabel('Title').fill('Standup (moved)');
    await editor.getByLabel('Starts').fill((await editor.getByLabel('Starts').inputValue()).replace('T10:00', 'T11:00'));
    await editor.getByLabel('Ends').fill((await editor.getByLabel('Ends').inputValue()).replace('T10:15', 'T11:15'));
    await editor.getByRole('button', { name: 'Save event' }).click();
    const occurrences = async () => {
      const q = new URLSearchParams({ mailboxUid: p.aliceBox.uid, from: tomorrow.toISOString(), to: day(7).toISOString() });
      return (
        (await api.call('GET', `/api/mail/calendar-events/occurrences?${q}`, { token: p.alice })).body as Array<{
          summary: string;
          start: string;
        }>
      )
        .filter((o) => o.summary.startsWith('Standup'))
        .map((o) => `${o.summary} ${new Date(o.start).getDate()} ${new Date(o.start).getHours()}`);
    };
    const on = (n: number, h: number) => `${day(n).getDate()} ${h}`;
    await expect.poll(occurrences).toEqual([`Standup ${on(0, 10)}`, `Standup (moved) ${on(1, 11)}`, `Standup ${on(2, 10)}`]);
    // The third deleted alone: the series skips it.
    await next();
    await calendar.getByRole('button', { name: /Standup/ }).click();
    tab.once('dialog', (d) => void d.accept());
    await editor.getByRole('button', { name: 'Delete event' }).click();
    await expect.poll(occurrences).toEqual([`Standup ${on(0, 10)}`, `Standup (moved) ${on(1, 11)}`]);
    // The first opened and the whole series given a place: the exception keeps its own.
    await calendar.getByRole('button', { name: 'Previous' }).click();
    await calendar.getByRole('button', { name: 'Previous' }).click();
    await calendar.getByRole('button', { name: /Standup/ }).click();
    await editor.getByLabel('Every occurrence').check();
    await editor.getByLabel('Where').fill('Room 1');
    await editor.getByRole('button', { name: 'Save event' }).click();
    await expect
      .poll(async () => (await api.call('GET', `/api/mail/calendar-events/${made.body.uid}`, { token: p.alice })).body)
      .toMatchObject({ location: 'Room 1', start: tomorrow.toISOString() });
    expect(await occurrences()).toEqual([`Standup ${on(0, 10)}`, `Standup (moved) ${on(1, 11)}`]);

    // Export: the link downloads the calendar as iCalendar; import: a file of one event.
    const download = async (link: string) =>
      tab.evaluate(
        async (href) => {
          const r = await fetch(href!);
          return { type: r.headers.get('content-type'), text: await r.text() };
        },
        await tab.getByRole('link', { name: link }).getAttribute('href'),
      );
    const exported = await download('Export calendar');
    expect(exported.type).toMatch(/^text\/calendar/);
    expect(exported.text).toContain('SUMMARY:Standup (moved)');
    const ics = `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//test//EN\r\nBEGIN:VEVENT\r\nUID:imported-1@example.net\r\nDTSTAMP:20261101T000000Z\r\nDTSTART:${tomorrow.toISOString().replace(/[-:]/g, '').replace(/\.\d+/, '')}\r\nDURATION:PT1H\r\nSUMMARY:Imported review\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n`;
    await calendar
      .getByLabel('Import calendar…')
      .setInputFiles({ name: 'review.ics', mimeType: 'text/calendar', buffer: Buffer.from(ics) });
    await calendar.getByRole('status').filter({ hasText: '1 imported.' }).waitFor();
    await expect.poll(async () => (await list('calendar-events')).map((e: { summary: string }) => e.summary)).toContain('Imported review');

    await tab.goto(`${api.url}/#contacts`);
    const contacts = tab.getByRole('region', { name: 'Contacts' });
    const vcf = 'BEGIN:VCARD\r\nVERSION:4.0\r\nFN:Vera Card\r\nEMAIL:vera@example.net\r\nEND:VCARD\r\n';
    await contacts.getByLabel('Import contacts…').setInputFiles({ name: 'vera.vcf', mimeType: 'text/vcard', buffer: Buffer.from(vcf) });
    await contacts.getByRole('list', { name: 'Contacts' }).getByText('Vera Card').waitFor();
    const card = await download('Export contacts');
    expect(card.type).toMatch(/^text\/vcard/);
    expect(card.text).toContain('FN:Vera Card');
    expect(problems).toEqual([]);
    // The next test starts from an empty address book and calendar.
    for (const kind of ['contacts', 'calendar-events'])
      for (const r of await list(kind))
        expect((await api.call('DELETE', `/api/mail/${kind}/${r.uid}`, { token: p.alice, body: { version: r.version } })).status).toBe(204);
  });

  it('contacts and a contact list; tasks (the first list made) done; notes written and changed', async () => {
    const { tab, problems } = await open('contacts');
    const contact = tab.getByRole('form', { name: 'New contact', exact: true });
    await contact.getByLabel('Name').fill('Dora Diaz');
    await contact.getByLabel('Addresses (comma-separated)').fill('dora@example.net, d.diaz@example.org');
    await contact.getByRole('button', { name: 'Add contact' }).click();
    await tab.getByRole('list', { name: 'Contacts' }).getByText('Dora Diaz').waitFor();
    expect((await list('contacts'))[0]).toMatchObject({
      fn: 'Dora Diaz',
      emails: [{ value: 'dora@example.net' }, { value: 'd.diaz@example.org' }],
    });
    await tab.getByLabel('Find a contact').fill('zzz');
    await expect.poll(() => tab.getByRole('list', { name: 'Contacts' }).getByRole('listitem').count()).toBe(0);
    await tab.getByLabel('Find a contact').fill('diaz');
    await tab.getByRole('form', { name: 'New contact list' }).getByLabel('List name').fill('Dentists');
    await tab.getByRole('button', { name: 'Add list' }).click();
    await tab.getByLabel('Add to Dentists').selectOption({ label: 'Dora Diaz' });
    await expect.poll(async () => (await list('contact-lists'))[0]?.members.length).toBe(1);

    await tab.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Tasks' }).click();
    const task = tab.getByRole('form', { name: 'New task' });
    await task.getByLabel('Task').fill('File taxes');
    await task.getByLabel('Due').fill('2026-12-31');
    await task.getByRole('button', { name: 'Add task' }).click();
    await tab.getByRole('checkbox', { name: 'File taxes' }).check();
    await expect.poll(async () => (await list('tasks'))[0]?.completed).toBe(true);
    expect((await list('tasks'))[0].completedAt).not.toBeNull();
    expect((await list('task-lists')).map((l: { name: string }) => l.name)).toEqual(['Tasks']);

    await tab.getByRole('navigation', { name: 'Views' }).getByRole('link', { name: 'Notes' }).click();
    const note = tab.getByRole('form', { name: 'New note' });
    await note.getByLabel('Title').fill('Ideas');
    await note.getByLabel('Text').fill('Paint the fence.');
    await note.getByRole('button', { name: 'Save note' }).click();
    await tab.getByRole('list', { name: 'Notes' }).getByRole('button', { name: 'Ideas', exact: true }).click();
    await tab.getByRole('form', { name: 'Note Ideas' }).getByLabel('Text').fill('Paint the fence green.');
    await tab.getByRole('button', { name: 'Save note' }).click();
    await expect.poll(async () => (await list('notes'))[0]?.body).toBe('Paint the fence green.');
    // the view stays after a reload
    await tab.reload();
    await tab.getByRole('list', { name: 'Notes' }).waitFor();
    expect(problems).toEqual([]);
  });

  it('axe-core finds nothing serious in any view; each fits 360 and 1280 px (screenshots)', async () => {
    const { tab } = await open('calendar', { bypassCSP: true });
    const found: string[] = [];
    // Screenshots of each view and width go to SVCMAIL_SCREENSHOTS (default: a folder in the temporary directory).
    const shots = process.env.SVCMAIL_SCREENSHOTS ?? join(tmpdir(), 'svcmail-screenshots');
    mkdirSync(shots, { recursive: true });
    const ready: Record<string, () => Promise<void>> = {
      calendar: () => tab.getByRole('region', { name: 'Calendar' }).waitFor(),
      contacts: () => tab.getByRole('heading', { name: 'Contact lists' }).waitFor(),
      tasks: () => tab.getByRole('form', { name: 'New task', exact: true }).waitFor(),
      notes: () => tab.getByRole('form', { name: 'New note' }).waitFor(),
    };
    for (const view of Object.keys(ready)) {
      await tab.goto(`${api.url}/#${view}`);
      await ready[view]();
      for (const f of await axeFindings(tab)) found.push(`${view}: ${f}`);
      for (const width of [360, 1280]) {
        await tab.setViewportSize({ width, height: 800 });
        const wide = await tab.evaluate(
          () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
        );
        if (wide > width) found.push(`${view} at ${width} px is ${wide} px wide`);
        await tab.screenshot({ path: join(shots, `${view}-${width}.png`), fullPage: true });
      }
    }
    // The week on its hour grid, an event on it.
    const start = new Date();
    start.setHours(10, 0, 0, 0);
    const ev = {
      mailboxUid: p.aliceBox.uid,
      summary: 'Grid check',
      start: start.toISOString(),
      end: new Date(start.getTime() + 3600_000).toISOString(),
    };
    expect((await api.call('POST', '/api/mail/calendar-events', { token: p.alice, body: ev })).status).toBe(201);
    await tab.goto(`${api.url}/#calendar`);
    await tab.getByRole('region', { name: 'Calendar' }).getByLabel('Show').selectOption('week');
    await tab.getByRole('button', { name: /Grid check/ }).waitFor();
    for (const f of await axeFindings(tab)) found.push(`week: ${f}`);
    for (const width of [360, 1280]) {
      await tab.setViewportSize({ width, height: 800 });
      const wide = await tab.evaluate(
        () => (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement.scrollWidth,
      );
      if (wide > width) found.push(`week at ${width} px is ${wide} px wide`);
      await tab.screenshot({ path: join(shots, `calendar-week-${width}.png`), fullPage: true });
    }
    expect(found).toEqual([]);
  });
});
