// A scripted device session per client style (iOS 14.1, Android 16.1, Outlook 16.0) against the
// appliance as it runs — `svcmail start --foreground`, the four daemons as separate processes:
// OPTIONS → Provision (two steps) → FolderSync → Sync from 0 → mail handed off through
// /internal/mta and filed by the worker daemon → the parked Ping wakes (the event crosses processes)
// → Sync gets the Add → flag and move from the device → SendMail and SmartReply reach another
// mailbox through the send path → contacts, calendar and tasks round trips → remote wipe at the
// next Provision.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startRunningAppliance, type RunningAppliance } from '../../../helpers/running-appliance.js';
import { as, cm, Device, fh, kid, kids, mv, ns, pg, pv, textOf } from './_client.js';

const STYLES = [
  { name: 'iOS', type: 'iPhone', version: '14.1' },
  { name: 'Android', type: 'Android', version: '16.1' },
  { name: 'Outlook', type: 'WindowsOutlook15', version: '16.0' },
] as const;

describe('device sessions against the running appliance', { timeout: 300_000 }, () => {
  let app: RunningAppliance;
  let api = '';
  const tokens: Record<string, string> = {};
  const boxes: Record<string, string> = {};
  const call = (user: string, method: string, path: string, body?: unknown) => app.call(tokens[user], method, path, body);

  beforeAll(async () => {
    app = await startRunningAppliance();
    api = app.api;
    tokens.admin = await app.token('root', { roles: ['admin'], elevated: true });
    for (const u of ['alice', 'bob']) tokens[u] = await app.token(u);
    expect((await call('admin', 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    for (const u of ['alice', 'bob'])
      boxes[u] = (await call('admin', 'POST', '/api/mail/mailboxes', { address: `${u}@example.test`, owners: [u], name: u })).body.uid;
    expect((await call('alice', 'POST', '/api/mail/task-lists', { mailboxUid: boxes.alice, name: 'Errands' })).status).toBe(201);
  }, 200_000);
  afterAll(() => app?.stop());

  const handOff = (to: string, subject: string) =>
    app.handOff(
      to,
      `From: Carol <carol@example.net>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '-')}@example.net>\r\nDate: ${new Date().toUTCString()}\r\n\r\nHello, ${subject}.\r\n`,
    );
  const until = <T>(what: string, probe: () => Promise<T | undefined>, ms = 30_000) => app.until(what, probe, ms);

  /**
   * Contacts, calendar and tasks of one device: each Added from the device and found through the
   * API, changed through the API and sent to the device as a Change, changed from the device (a
   * task completed) and found so through the API.
   */
  const pimRoundTrips = async (d: Device, style: (typeof STYLES)[number]) => {
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const byType = (type: string, name?: string) =>
      textOf(
        kids(kid(fs.tree!, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === type && (!name || textOf(a, 'DisplayName') === name))!,
        'ServerId',
      )!;
    const keys: Record<string, number> = {};
    const sync = async (folder: string, commands: ReturnType<typeof as>[] = []) => {
      const r = await d.send(
        'Sync',
        as('Sync', [
          as('Collections', [
            as('Collection', [
              as('SyncKey', keys[folder] ?? 0),
              as('CollectionId', folder),
              as('GetChanges', '1'),
              as('WindowSize', 50),
              ...(commands.length ? [as('Commands', commands)] : []),
            ]),
          ]),
        ]),
      );
      const c = kid(kid(r.tree!, 'Collections'), 'Collection')!;
      expect(textOf(c, 'Status')).toBe('1');
      keys[folder] = Number(textOf(c, 'SyncKey'));
      return { commands: kid(c, 'Commands')?.children ?? [], responses: kid(c, 'Responses')?.children ?? [] };
    };
    const added = async (folder: string, data: ReturnType<typeof as>[]) => {
      for (let i = 0; i < 2; i++) await sync(folder); // key 0, then what the folder holds
      const [resp] = (await sync(folder, [as('Add', [as('ClientId', `${style.name}-add`), as('ApplicationData', data)])])).responses;
      expect(textOf(resp, 'Status')).toBe('1');
      return textOf(resp, 'ServerId')!;
    };
    const co = ns('Contacts');
    const ca = ns('Calendar');
    const tk = ns('Tasks');
    const contacts = byType('9');
    const contact = await added(contacts, [
      co('FirstName', style.name),
      co('LastName', 'Phone'),
      co('Email1Address', `${style.name}@example.org`),
    ]);
    const c = (await call('alice', 'GET', `/api/mail/contacts/${contact}`)).body;
    expect(c).toMatchObject({ fn: `${style.name} Phone`, emails: [{ value: `${style.name.toLowerCase()}@example.org` }] });
    expect((await call('alice', 'PUT', `/api/mail/contacts/${contact}`, { title: 'Tester', version: c.version })).status).toBe(200);
    const [changed] = (await sync(contacts)).commands;
    expect([changed.tag, textOf(kid(changed, 'ApplicationData'), 'JobTitle')]).toEqual(['Change', 'Tester']);

    const calendar = byType('8');
    const event = await added(calendar, [
      ca('StartTime', '20261201T140000Z'),
      ca('EndTime', '20261201T150000Z'),
      ca('Subject', `Meeting from ${style.name}`),
      ca('AllDayEvent', '0'),
    ]);
    const e = (await call('alice', 'GET', `/api/mail/calendar-events/${event}`)).body;
    expect(e).toMatchObject({ summary: `Meeting from ${style.name}`, start: '2026-12-01T14:00:00.000Z', end: '2026-12-01T15:00:00.000Z' });
    expect((await call('alice', 'PUT', `/api/mail/calendar-events/${event}`, { summary: 'Moved', version: e.version })).status).toBe(200);
    const [moved] = (await sync(calendar)).commands;
    expect([moved.tag, textOf(kid(moved, 'ApplicationData'), 'Subject')]).toEqual(['Change', 'Moved']);

    const tasks = byType('7', 'Errands');
    const task = await added(tasks, [tk('Subject', `Task from ${style.name}`), tk('Complete', '0')]);
    expect((await call('alice', 'GET', `/api/mail/tasks/${task}`)).body).toMatchObject({
      title: `Task from ${style.name}`,
      completed: false,
    });
    await sync(tasks, [
      as('Change', [
        as('ServerId', task),
        as('ApplicationData', [
          tk('Subject', `Task from ${style.name}`),
          tk('Complete', '1'),
          tk('DateCompleted', '2026-11-30T10:00:00.000Z'),
        ]),
      ]),
    ]);
    expect((await call('alice', 'GET', `/api/mail/tasks/${task}`)).body).toMatchObject({ completed: true });
  };

  it.each(STYLES)('$name ($version): a whole day of a phone, through the real daemons', async (style) => {
    const protocols = `http://${new URL(api).host}`; // the api daemon's front door forwards /Microsoft-Server-ActiveSync
    const d = new Device(protocols, `Bearer ${tokens.alice}`, `${style.name.toUpperCase()}1`, style.type, style.version);
    const options = await fetch(`${protocols}/Microsoft-Server-ActiveSync`, { method: 'OPTIONS' });
    expect(options.headers.get('ms-asprotocolversions')).toContain(style.version);
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const folders = Object.fromEntries(
      kids(kid(fs.tree!, 'Changes'), 'Add').map((a) => [textOf(a, 'DisplayName')!, textOf(a, 'ServerId')!]),
    );
    let key = 0;
    const sync = async (extra: ReturnType<typeof as>[] = []) => {
      const r = await d.send(
        'Sync',
        as('Sync', [
          as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', folders.Inbox), as('WindowSize', 50), ...extra])]),
        ]),
      );
      const c = kid(kid(r.tree!, 'Collections'), 'Collection')!;
      key = Number(textOf(c, 'SyncKey'));
      return kid(c, 'Commands')?.children ?? [];
    };
    await sync();
    await sync(); // everything the device should hold so far
    // Park a Ping, hand a message off through the MTA path: the worker files it, the Ping wakes.
    const ping = d.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '120'), pg('Folders', [pg('Folder', [pg('Id', folders.Inbox), pg('Class', 'Email')])])]),
    );
    await new Promise((r) => setTimeout(r, 500));
    const subject = `for ${style.name}`;
    await handOff('alice@example.test', subject);
    const woke = await ping;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
    const [add] = (await sync()).filter((c) => c.tag === 'Add' && textOf(kid(c, 'ApplicationData'), 'Subject') === subject);
    expect(add).toBeDefined();
    const id = textOf(add, 'ServerId')!;
    // Flag it and move it to Archive: the mailbox follows.
    await sync([
      as('Commands', [as('Change', [as('ServerId', id), as('ApplicationData', [ns('Email')('Flag', [ns('Email')('FlagStatus', '2')])])])]),
    ]);
    expect((await call('alice', 'GET', `/api/mail/messages/${id}`)).body.flagged).toBe(true);
    const moved = await d.send(
      'MoveItems',
      mv('MoveItems', [mv('Move', [mv('SrcMsgId', id), mv('SrcFldId', folders.Inbox), mv('DstFldId', folders.Archive)])]),
    );
    expect(textOf(kid(moved.tree!, 'Response'), 'Status')).toBe('3');
    expect((await call('alice', 'GET', `/api/mail/messages/${id}`)).body.folderUid).toBe(folders.Archive);
    // SendMail and SmartReply through the send path reach bob's Inbox.
    const mime = (subj: string) =>
      Buffer.from(
        `From: alice@example.test\r\nTo: bob@example.test\r\nSubject: ${subj}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\nFrom my ${style.name} phone.\r\n`,
      );
    const sent = await d.send(
      'SendMail',
      cm('SendMail', [cm('ClientId', `${style.name}-1`), cm('SaveInSentItems'), cm('Mime', mime(`sent from ${style.name}`))]),
    );
    expect(sent.status).toBe(200);
    expect(sent.tree).toBeNull();
    const replied = await d.send(
      'SmartReply',
      cm('SmartReply', [
        cm('ClientId', `${style.name}-2`),
        cm('Source', [cm('FolderId', folders.Archive), cm('ItemId', id)]),
        cm('Mime', mime(`Re: ${subject}`)),
      ]),
    );
    expect(replied.status).toBe(200);
    const bobInbox = async () => {
      const f = await call('bob', 'GET', `/api/mail/folders?mailboxUid=${boxes.bob}&role=inbox`);
      return (await call('bob', 'GET', `/api/mail/messages?folderUid=${f.body[0].uid}&limit=200`)).body as Array<{ subject: string }>;
    };
    await until('bob gets both', async () => {
      const s = (await bobInbox()).map((m) => m.subject);
      return s.includes(`sent from ${style.name}`) && s.includes(`Re: ${subject}`) ? true : undefined;
    });
    await pimRoundTrips(d, style);
    // An administrator wipes the device: it is told at its next command and wiped at Provision.
    const devices = (await call('admin', 'GET', '/api/mail/devices')).body as Array<{ uid: string; deviceId: string }>;
    const mine = devices.find((x) => x.deviceId === d.id)!;
    expect((await call('admin', 'POST', `/api/mail/devices/${mine.uid}/remote-wipe`, {})).status).toBe(200);
    expect(textOf((await d.send('Ping', null)).tree!, 'Status')).toBe('140');
    const p = await d.send('Provision', pv('Provision', [pv('Policies', [pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML')])])]));
    expect(kid(p.tree!, 'RemoteWipe')).toBeDefined();
    await d.send('Provision', pv('Provision', [pv('RemoteWipe', [pv('Status', '1')])]));
    expect((await call('admin', 'GET', `/api/mail/devices/${mine.uid}`)).body).toMatchObject({ wipe: 'wiped', blocked: true });
  });
});
