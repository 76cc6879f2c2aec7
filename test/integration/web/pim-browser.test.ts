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
    await calendar.getByRole('button', { name: /Dentist/ }).waitFor();
    await calendar.getByRole('button', { name: /Dentist/ }).click();
    tab.once('dialog', (d) => void d.accept());
    await tab.getByRole('form', { name: 'Event' }).getByRole('button', { name: 'Delete event' }).click();
    await expect.poll(async () => (await list('calendar-events')).length).toBe(0);

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
    expect(found).toEqual([]);
  });
});
