// Contacts and tasks over mobile sync (MS-ASCNTC, MS-ASTASK) against the real protocols app, on both
// SQL engines: FolderSync lists the folders; records made through the HTTP API arrive as Adds with
// their fields; a device's Add, Change and Delete reach the records (checked through the API); a
// device's change of a record changed on the server meanwhile loses to the server's version; another
// user's device is refused; GetItemEstimate and Ping see the records. Calendar: pim-calendar.test.ts.
// Every WBXML body is also decoded by libwbxml and Horde and checked with the schemas.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../../helpers/databases.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { as, asb, crossDecode, fh, ge, kid, kids, ns, pg, textOf } from './_client.js';
import { collectionOf, commandsOf, pimFixture, responsesOf, type PimFixture } from './_pim.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');

const co = ns('Contacts');
const tk = ns('Tasks');

describe.each(backends)('contacts and tasks over mobile sync ($name)', (backend) => {
  let f: PimFixture;
  beforeAll(async () => {
    f = await pimFixture(backend);
  }, 60_000);
  afterAll(async () => f?.close());

  it('FolderSync lists Contacts (9), Calendar (8), the default task list (7) and the others (15) with stable ids', async () => {
    const { folders, s, d } = f;
    expect(folders.Contacts).toEqual({ id: `c-${s.aliceBox}`, type: '9' });
    expect(folders.Calendar).toEqual({ id: `k-${s.aliceBox}`, type: '8' });
    expect(folders.Errands).toEqual({ id: `t-${s.aliceBox}`, type: '7' });
    expect(folders.Work).toMatchObject({ type: '15' });
    expect(folders.Inbox.type).toBe('2');
    for (const x of Object.values(folders)) expect(x.id.length).toBeLessThanOrEqual(64);
    const again = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', textOf(f.folderSync, 'SyncKey')!)]));
    expect(textOf(kid(again.tree!, 'Changes'), 'Count')).toBe('0');
  });

  it('a contact made through the API arrives as an Add with its fields', async () => {
    const { s, d, folders, sync, api } = f;
    await api('POST', '/api/mail/contacts', {
      mailboxUid: s.aliceBox,
      fn: 'Jane Roe',
      givenName: 'Jane',
      middleName: 'Q.',
      familyName: 'Roe',
      emails: [{ type: 'work', value: 'jane@example.net' }],
      phones: [
        { type: 'cell', value: '+49 170 1' },
        { type: 'work', value: '+49 30 2' },
        { type: 'fax', value: '+49 30 3' },
      ],
      org: 'Roe GmbH',
      title: 'CTO',
      birthday: '1980-05-15',
      addresses: [{ type: 'home', value: 'Hauptstr. 1, Berlin' }],
      note: 'Met at the fair.',
      categories: ['Business'],
    });
    await sync(d, folders.Contacts.id);
    const [add] = commandsOf(await sync(d, folders.Contacts.id));
    expect(add.tag).toBe('Add');
    const data = kid(add, 'ApplicationData')!;
    expect(textOf(data, 'FileAs')).toBe('Jane Roe');
    expect(textOf(data, 'FirstName')).toBe('Jane');
    expect(textOf(data, 'MiddleName')).toBe('Q.');
    expect(textOf(data, 'LastName')).toBe('Roe');
    expect(textOf(data, 'Email1Address')).toBe('"Jane Roe" <jane@example.net>');
    expect(textOf(data, 'MobilePhoneNumber')).toBe('+49 170 1');
    expect(textOf(data, 'BusinessPhoneNumber')).toBe('+49 30 2');
    expect(textOf(data, 'CompanyName')).toBe('Roe GmbH');
    expect(textOf(data, 'JobTitle')).toBe('CTO');
    expect(textOf(data, 'Birthday')).toBe('1980-05-15T00:00:00.000Z');
    expect(textOf(data, 'HomeAddressStreet')).toBe('Hauptstr. 1, Berlin');
    expect(textOf(kid(data, 'Categories'), 'Category')).toBe('Business');
    expect(textOf(kid(data, 'Body'), 'Data')).toBe('Met at the fair.');
  });

  it("a device that reads HTML first gets a record's text as HTML, escaped, its lines kept", async () => {
    const { s, folders, sync, api, device } = f;
    const c = await api('POST', '/api/mail/contacts', { mailboxUid: s.aliceBox, fn: 'Html Reader', note: 'line <one> & more\nline two' });
    const d = await device('PIMHTML', s.alice);
    await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    await sync(d, folders.Contacts.id, { bodyType: '2' });
    const added = commandsOf(await sync(d, folders.Contacts.id, { bodyType: '2' })).find(
      (c) => textOf(kid(c, 'ApplicationData'), 'FileAs') === 'Html Reader',
    )!;
    const body = kid(kid(added, 'ApplicationData'), 'Body');
    expect(textOf(body, 'Type')).toBe('2');
    expect(textOf(body, 'Data')).toBe('<div>line &lt;one&gt; &amp; more<br>line two</div>');
    await api('DELETE', `/api/mail/contacts/${c.uid}?version=${c.version}`); // the other tests' device never sees it
  });

  it("a device's Add, Change and Delete of a contact reach the records", async () => {
    const { stack, s, d, folders, sync, api } = f;
    const r = await sync(d, folders.Contacts.id, {
      commands: [
        as('Add', [
          as('ClientId', 'c1'),
          as('ApplicationData', [
            co('FirstName', 'Max'),
            co('MiddleName', 'Otto'),
            co('LastName', 'Muster'),
            co('Email1Address', '"Max Muster" <Max@Example.org>'),
            co('MobilePhoneNumber', '+41 79 5'),
            co('Birthday', '1990-03-01T23:00:00.000Z'),
            asb('Body', [asb('Type', '1'), asb('Data', 'from the phone')]),
          ]),
        ]),
      ],
    });
    const [resp] = responsesOf(r);
    expect(resp.tag).toBe('Add');
    expect(textOf(resp, 'ClientId')).toBe('c1');
    expect(textOf(resp, 'Status')).toBe('1');
    const uid = textOf(resp, 'ServerId')!;
    expect(commandsOf(r)).toEqual([]); // its own Add is not sent back
    expect(await api('GET', `/api/mail/contacts/${uid}`)).toMatchObject({
      mailboxUid: s.aliceBox,
      fn: 'Max Otto Muster',
      givenName: 'Max',
      middleName: 'Otto',
      emails: [{ value: 'max@example.org' }],
      phones: [{ type: 'cell', value: '+41 79 5' }],
      birthday: '1990-03-02',
      note: 'from the phone',
    });
    await sync(d, folders.Contacts.id, {
      commands: [
        as('Change', [
          as('ServerId', uid),
          as('ApplicationData', [co('FirstName', 'Maximilian'), co('LastName', 'Muster'), co('JobTitle', 'Pilot')]),
        ]),
      ],
    });
    expect(await api('GET', `/api/mail/contacts/${uid}`)).toMatchObject({
      fn: 'Maximilian Muster',
      middleName: '',
      title: 'Pilot',
      note: 'from the phone',
    });
    expect(commandsOf(await sync(d, folders.Contacts.id))).toEqual([]);
    await sync(d, folders.Contacts.id, { commands: [as('Delete', [as('ServerId', uid)])] });
    expect((await stack.call('GET', `/api/mail/contacts/${uid}`, s.alice)).status).toBe(404);
  });

  it("server wins: a device's change of a contact changed on the server meanwhile is answered with the server's version", async () => {
    const { s, d, folders, sync, api } = f;
    const [jane] = (await api('GET', `/api/mail/contacts?mailboxUid=${s.aliceBox}`)) as Array<{ uid: string; version: number }>;
    await api('PUT', `/api/mail/contacts/${jane.uid}`, { title: 'CEO', version: jane.version });
    const r = await sync(d, folders.Contacts.id, {
      commands: [as('Change', [as('ServerId', jane.uid), as('ApplicationData', [co('FileAs', 'Jane Roe'), co('JobTitle', 'Intern')])])],
    });
    expect(responsesOf(r).map((x) => [x.tag, textOf(x, 'Status')])).toEqual([['Change', '7']]);
    const [change] = commandsOf(r);
    expect(change.tag).toBe('Change');
    expect(textOf(kid(change, 'ApplicationData'), 'JobTitle')).toBe('CEO');
    expect(await api('GET', `/api/mail/contacts/${jane.uid}`)).toMatchObject({ title: 'CEO', org: 'Roe GmbH' });
  });

  it('a delete on the server reaches the device; GetItemEstimate and Ping see the contacts folder', async () => {
    const { s, d, folders, sync, api, keys } = f;
    const c = await api('POST', '/api/mail/contacts', { mailboxUid: s.aliceBox, fn: 'Short Lived' });
    const key = keys[`${d.id}:${folders.Contacts.id}`];
    const estimate = await d.send(
      'GetItemEstimate',
      ge('GetItemEstimate', [ge('Collections', [ge('Collection', [as('SyncKey', key), ge('CollectionId', folders.Contacts.id)])])]),
    );
    expect(textOf(kid(kid(estimate.tree!, 'Response'), 'Collection'), 'Estimate')).toBe('1');
    const ping = () =>
      d.send(
        'Ping',
        pg('Ping', [
          pg('HeartbeatInterval', '120'),
          pg('Folders', [pg('Folder', [pg('Id', folders.Contacts.id), pg('Class', 'Contacts')])]),
        ]),
      );
    const waiting = await ping();
    expect(textOf(waiting.tree!, 'Status')).toBe('2');
    expect(commandsOf(await sync(d, folders.Contacts.id)).map((x) => x.tag)).toEqual(['Add']);
    // Parked: a mail folder event does not wake it, a contact's delete does.
    const parked = ping();
    await new Promise((r) => setTimeout(r, 300));
    await api('POST', '/api/mail/folders', { mailboxUid: s.aliceBox, name: 'Unrelated' });
    await api('DELETE', `/api/mail/contacts/${c.uid}?version=${c.version}`);
    const woke = await parked;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
    expect(kids(kid(woke.tree!, 'Folders'), 'Folder').map((f) => f.text)).toEqual([folders.Contacts.id]);
    const del = commandsOf(await sync(d, folders.Contacts.id));
    expect(del.map((x) => [x.tag, textOf(x, 'ServerId')])).toEqual([['Delete', c.uid]]);
  });

  it("a parked Ping on a task list wakes on the list's own channel when a task is added through the API", async () => {
    const { s, d, folders, sync, api } = f;
    const work = folders.Work.id;
    await sync(d, work); // holds the list as it is
    const started = Date.now();
    const parked = d.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '120'), pg('Folders', [pg('Folder', [pg('Id', work), pg('Class', 'Tasks')])])]),
    );
    await new Promise((r) => setTimeout(r, 300));
    const workList = work.slice('t-'.length);
    await api('POST', '/api/mail/tasks', { mailboxUid: s.aliceBox, taskListUid: workList, title: 'Ship it' });
    const woke = await parked;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
    expect(Date.now() - started).toBeLessThan(20_000); // pushed, not found by a poll
    expect(commandsOf(await sync(d, work)).map((x) => textOf(kid(x, 'ApplicationData'), 'Subject'))).toEqual(['Ship it']);
  });

  it("another user's device cannot sync alice's contacts, calendar or tasks (status 8)", async () => {
    const { s, folders, listUid, device, sync } = f;
    const bob = await device('BOBPIM', s.bob);
    for (const f of [folders.Contacts.id, folders.Calendar.id, folders.Errands.id, `t-${listUid}`])
      expect(textOf(collectionOf(await sync(bob, f)), 'Status'), f).toBe('8');
  });

  it("tasks: the API's task arrives with due date and completion; a device's Add, Change (complete) and Delete; FilterType 8", async () => {
    const { stack, s, d, d16, folders, listUid, sync, api } = f;
    await api('POST', '/api/mail/tasks', {
      mailboxUid: s.aliceBox,
      taskListUid: listUid,
      title: 'Buy milk',
      due: '2026-12-01T00:00:00.000Z',
      priority: 'high',
      notes: '2 litres',
    });
    const folder = folders.Errands.id;
    await sync(d, folder);
    const [add] = commandsOf(await sync(d, folder));
    const data = kid(add, 'ApplicationData')!;
    expect([textOf(data, 'Subject'), textOf(data, 'Importance'), textOf(data, 'UtcDueDate'), textOf(data, 'Complete')]).toEqual([
      'Buy milk',
      '2',
      '2026-12-01T00:00:00.000Z',
      '0',
    ]);
    expect(textOf(kid(data, 'Body'), 'Data')).toBe('2 litres');
    const r = await sync(d, folder, {
      commands: [
        as('Add', [
          as('ClientId', 't1'),
          as('ApplicationData', [
            tk('Subject', 'Call mum'),
            tk('Importance', '0'),
            tk('UtcDueDate', '2026-12-24T00:00:00.000Z'),
            tk('DueDate', '2026-12-24T00:00:00.000Z'),
            tk('Complete', '0'),
          ]),
        ]),
      ],
    });
    const uid = textOf(responsesOf(r)[0], 'ServerId')!;
    expect(await api('GET', `/api/mail/tasks/${uid}`)).toMatchObject({
      taskListUid: listUid,
      title: 'Call mum',
      priority: 'low',
      due: '2026-12-24T00:00:00.000Z',
      completed: false,
    });
    await sync(d, folder, {
      commands: [
        as('Change', [
          as('ServerId', uid),
          as('ApplicationData', [
            tk('Subject', 'Call mum'),
            tk('Importance', '0'),
            tk('Complete', '1'),
            tk('DateCompleted', '2026-11-30T10:00:00.000Z'),
          ]),
        ]),
      ],
    });
    const done = await api('GET', `/api/mail/tasks/${uid}`);
    expect(done).toMatchObject({ completed: true, due: null });
    expect(done.completedAt).toBeTruthy();
    // FilterType 8: the completed task is not on a device that asks for incomplete ones only.
    await sync(d16, folder, { filterType: '8' });
    const open = commandsOf(await sync(d16, folder, { filterType: '8' })).map((x) => textOf(kid(x, 'ApplicationData'), 'Subject'));
    expect(open).toEqual(['Buy milk']);
    await sync(d, folder, { commands: [as('Delete', [as('ServerId', uid)])] });
    expect((await stack.call('GET', `/api/mail/tasks/${uid}`, s.alice)).status).toBe(404);
  });

  it('a mailbox without a task list shows a Tasks folder; the first task a device adds there makes the list', async () => {
    const { stack, s, device, sync } = f;
    const carolBox = (
      await stack.call('POST', '/api/mail/mailboxes', s.admin, { address: 'carol@example.test', owners: ['carol'], name: 'carol' })
    ).body.uid as string;
    const carol = await device('CAROL1', await stack.token({ uid: 'carol' }));
    const fs = await carol.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const tasks = kids(kid(fs.tree!, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === '7')!;
    expect([textOf(tasks, 'ServerId'), textOf(tasks, 'DisplayName')]).toEqual([`t-${carolBox}`, 'Tasks']);
    await sync(carol, `t-${carolBox}`);
    const r = await sync(carol, `t-${carolBox}`, {
      commands: [as('Add', [as('ClientId', 'x'), as('ApplicationData', [tk('Subject', 'First'), tk('Complete', '0')])])],
    });
    expect(textOf(responsesOf(r)[0], 'Status')).toBe('1');
    expect(commandsOf(r)).toEqual([]);
    const lists = (await stack.call('GET', `/api/mail/task-lists?mailboxUid=${carolBox}`, await stack.token({ uid: 'carol' }))).body;
    expect(lists.map((l: { name: string }) => l.name)).toEqual(['Tasks']);
    expect(commandsOf(await sync(carol, `t-${carolBox}`))).toEqual([]);
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer with no unknown tag', () => {
    const all = f.devices.flatMap((x) => x.wire);
    expect(all.length).toBeGreaterThan(30);
    expect(crossDecode(all)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
