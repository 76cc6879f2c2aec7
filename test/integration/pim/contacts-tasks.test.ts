import ICAL from 'ical.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

// One vCard 3.0 as Apple and Google write them, one 4.0, and one without any name.
const VCF = [
  'BEGIN:VCARD',
  'VERSION:3.0',
  'N:Lee;Ann;Marie;;',
  'FN:Ann Lee',
  'ORG:Example Corp',
  'TITLE:Engineer',
  'EMAIL;TYPE=INTERNET;TYPE=WORK:Ann@Example.org',
  'TEL;TYPE=CELL:+49 170 1234567',
  'BDAY:1990-04-01',
  'NOTE:met at FOSDEM',
  'UID:ann-1',
  'END:VCARD',
  'BEGIN:VCARD',
  'VERSION:4.0',
  'FN:Bo Berg',
  'N:Berg;Bo;;;',
  'EMAIL;TYPE=home:bo@example.net',
  'CATEGORIES:friends,climbing',
  'END:VCARD',
  'BEGIN:VCARD',
  'VERSION:4.0',
  'TEL:+1 555 0100',
  'END:VCARD',
  '',
].join('\r\n');

describe.each(backends)('contacts, lists and tasks on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('imports vCards card by card, reporting the broken one without losing the others', async () => {
    const r = await api.call('POST', `/api/mail/contacts/import?mailboxUid=${p.aliceBox.uid}`, {
      token: p.alice,
      body: VCF,
      headers: { 'content-type': 'text/vcard' },
    });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ imported: 2, failed: 1 });
    expect(r.body.results[2]).toMatchObject({ index: 2, status: 400 });
    const list = await api.call('GET', `/api/mail/contacts?mailboxUid=${p.aliceBox.uid}&sort=fn`, { token: p.alice });
    expect(list.body.map((c: { fn: string }) => c.fn)).toEqual(['Ann Lee', 'Bo Berg']);
    expect(list.body[0]).toMatchObject({
      givenName: 'Ann',
      middleName: 'Marie',
      familyName: 'Lee',
      org: 'Example Corp',
      birthday: '1990-04-01',
      emails: [{ type: 'internet', value: 'ann@example.org' }],
      vcardUid: 'ann-1',
    });
    expect(list.body[1].categories).toEqual(['friends', 'climbing']);
  });

  it('exports vCard 4.0 that parses back to the same fields', async () => {
    const r = await api.call('GET', `/api/mail/contacts/export?mailboxUid=${p.aliceBox.uid}`, { token: p.alice });
    expect(r.headers.get('content-type')).toMatch(/^text\/vcard/);
    const cards = ICAL.parse(r.body as string) as unknown[];
    expect(cards).toHaveLength(2);
    const ann = new ICAL.Component(cards[0] as unknown[]);
    expect(ann.getFirstPropertyValue('fn')).toBe('Ann Lee');
    expect(ann.getFirstPropertyValue('n')).toEqual(['Lee', 'Ann', 'Marie', '', '']);
    expect(ann.getFirstPropertyValue('email')).toBe('ann@example.org');
    expect(ann.getFirstPropertyValue('uid')).toBe('ann-1');
    const again = await api.call('POST', `/api/mail/contacts/import?mailboxUid=${p.bobBox.uid}`, {
      token: p.bob,
      body: r.body,
      headers: { 'content-type': 'text/vcard' },
    });
    expect(again.body).toMatchObject({ imported: 2, failed: 0 });
  });

  it('keeps contact lists to contacts of the same mailbox', async () => {
    const mine = (await api.call('GET', `/api/mail/contacts?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    const theirs = (await api.call('GET', `/api/mail/contacts?mailboxUid=${p.bobBox.uid}`, { token: p.bob })).body;
    const ok = await api.call('POST', '/api/mail/contact-lists', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'Team', members: [{ contactUid: mine[0].uid }, { email: 'extern@example.net' }] },
    });
    expect(ok.status).toBe(201);
    const bad = await api.call('POST', '/api/mail/contact-lists', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'Sneaky', members: [{ contactUid: theirs[0].uid }] },
    });
    expect(bad.status).toBe(400);
  });

  it('completes tasks with a server-kept completion time, and guards non-empty lists', async () => {
    const list = await api.call('POST', '/api/mail/task-lists', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, name: 'Home' } });
    const task = await api.call('POST', '/api/mail/tasks', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, taskListUid: list.body.uid, title: 'Water plants', due: '2026-11-30T10:00:00Z' },
    });
    expect(task.status).toBe(201);
    expect(task.body.completedAt).toBeNull();
    const done = await api.call('PUT', `/api/mail/tasks/${task.body.uid}/completed`, {
      token: p.alice,
      body: { value: true, version: task.body.version },
    });
    expect(done.body.completed).toBe(true);
    expect(Date.parse(done.body.completedAt)).toBeGreaterThan(Date.now() - 60_000);
    const cheat = await api.call('PUT', `/api/mail/tasks/${task.body.uid}`, {
      token: p.alice,
      body: { version: done.body.version, completedAt: '2000-01-01T00:00:00Z' },
    });
    expect(cheat.status).toBe(400);
    const del = await api.call('DELETE', `/api/mail/task-lists/${list.body.uid}`, { token: p.alice, body: { version: list.body.version } });
    expect(del.status).toBe(409);
    expect(del.body.code).toBe('api-120');
  });

  it('answers 404 to another user and an elevated administrator on contacts, lists, notes and tasks', async () => {
    const note = await api.call('POST', '/api/mail/notes', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, title: 'Private', body: 'diary' },
    });
    const tasks = (await api.call('GET', `/api/mail/tasks?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    const contacts = (await api.call('GET', `/api/mail/contacts?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    for (const token of [p.bob, p.admin]) {
      for (const path of [
        `/api/mail/notes/${note.body.uid}`,
        `/api/mail/tasks/${tasks[0].uid}`,
        `/api/mail/contacts/${contacts[0].uid}`,
        `/api/mail/contacts/export?mailboxUid=${p.aliceBox.uid}`,
        `/api/mail/notes?mailboxUid=${p.aliceBox.uid}`,
      ]) {
        const r = await api.call('GET', path, { token });
        expect(r.status, path).toBe(404);
        expect(JSON.stringify(r.body)).not.toContain('diary');
      }
      expect((await api.call('PUT', `/api/mail/notes/${note.body.uid}`, { token, body: { version: 1, body: 'x' } })).status).toBe(404);
    }
  });
});
