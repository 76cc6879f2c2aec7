// The client behaviours the anchors' trackers are full of (issue: Known client traps), each as a
// device does it: iOS starting a collection over with SyncKey 0 again, Android Gmail sending
// FolderSync with SyncKey 0 on every refresh, Outlook's FolderSync after folders changed on the
// server, Samsung sending 16.0 elements in its Sync options, a Ping without folders after one with
// folders. (SendMail's iOS invitation replies: compose.test.ts.)
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin, easPlugin } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, asb, Device, fh, kid, kids, ns, pg, pv, textOf } from './_client.js';

const backends = await sqlBackends();

const mail = (n: number) =>
  `From: carol@example.net\r\nTo: alice@example.test\r\nSubject: trap ${n}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <trap-${n}-${Date.now()}@x>\r\n\r\nbody ${n}\r\n`;

describe.each(backends)('known client traps ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin] });
    s = await seed(stack);
    for (const n of [1, 2, 3]) await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(n));
  }, 60_000);
  afterAll(async () => stack?.close());

  async function device(id: string, type: string, version = '14.1') {
    const d = new Device(stack.protocols, `Bearer ${s.alice}`, id, type, version);
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const folders = Object.fromEntries(
      kids(kid(fs.tree!, 'Changes'), 'Add').map((a) => [textOf(a, 'DisplayName')!, textOf(a, 'ServerId')!]),
    );
    return { d, folders, folderKey: textOf(fs.tree!, 'SyncKey')! };
  }
  const sync = async (d: Device, folder: string, key: number | string, options: ReturnType<typeof as>[] = []) => {
    const r = await d.send(
      'Sync',
      as('Sync', [
        as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', folder), as('WindowSize', 10), ...options])]),
      ]),
    );
    const c = kid(kid(r.tree!, 'Collections'), 'Collection')!;
    return { c, key: Number(textOf(c, 'SyncKey')), adds: (kid(c, 'Commands')?.children ?? []).filter((x) => x.tag === 'Add').length };
  };

  it('iOS: SyncKey 0 again for a collection it already had starts it over (every item again), not a loop of errors', async () => {
    const { d, folders } = await device('IOSTRAP', 'iPhone');
    await sync(d, folders.Inbox, 0);
    const first = await sync(d, folders.Inbox, 1);
    expect(first.adds).toBe(3);
    const again = await sync(d, folders.Inbox, 0);
    expect(again.key).toBe(1);
    const refill = await sync(d, folders.Inbox, 1);
    expect(textOf(refill.c, 'Status')).toBe('1');
    expect(refill.adds).toBe(3);
  });

  it('Android Gmail: FolderSync with SyncKey 0 on every refresh keeps the collections: their keys stay valid', async () => {
    const { d, folders } = await device('GMAILTRAP', 'Android', '16.1');
    await sync(d, folders.Inbox, 0);
    const filled = await sync(d, folders.Inbox, 1);
    for (let i = 0; i < 3; i++)
      expect(textOf((await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]))).tree!, 'Status')).toBe('1');
    const next = await sync(d, folders.Inbox, filled.key);
    expect(textOf(next.c, 'Status')).toBe('1');
    expect(next.adds).toBe(0);
  });

  it('Outlook: FolderSync after folders were made, renamed and deleted on the server answers Add, Update and Delete', async () => {
    const { d, folderKey } = await device('OUTLOOKTRAP', 'WindowsOutlook15', '16.0');
    const made = await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Later' });
    const doomed = await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Doomed' });
    const one = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', folderKey)]));
    expect(kids(kid(one.tree!, 'Changes'), 'Add').map((a) => textOf(a, 'DisplayName'))).toEqual(['Later', 'Doomed']);
    await stack.call('PUT', `/api/mail/folders/${made.body.uid}`, s.alice, { name: 'Later on', version: made.body.version });
    await stack.call('DELETE', `/api/mail/folders/${doomed.body.uid}?version=${doomed.body.version}`, s.alice);
    const two = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', textOf(one.tree!, 'SyncKey')!)]));
    const changes = kid(two.tree!, 'Changes')!;
    expect(kids(changes, 'Update').map((u) => [textOf(u, 'ServerId'), textOf(u, 'DisplayName')])).toEqual([[made.body.uid, 'Later on']]);
    expect(kids(changes, 'Delete').map((x) => textOf(x, 'ServerId'))).toEqual([doomed.body.uid]);
    expect(textOf(changes, 'Count')).toBe('2');
  });

  it('Samsung: 16.0 elements in the Sync options of a 14.1 request are accepted and the bodies still come as asked', async () => {
    const { d, folders } = await device('SAMSUNGTRAP', 'SAMSUNGSMG991B', '14.1');
    await sync(d, folders.Inbox, 0);
    const r = await sync(d, folders.Inbox, 1, [
      as('Options', [
        as('FilterType', '3'),
        asb('BodyPreference', [asb('Type', '2'), asb('TruncationSize', '32768')]),
        asb('BodyPartPreference', [asb('Type', '2'), asb('TruncationSize', '10000')]),
        as('MIMESupport', '0'),
      ]),
    ]);
    expect(textOf(r.c, 'Status')).toBe('1');
    expect(r.adds).toBe(3);
    const body = kid(kid((kid(r.c, 'Commands')!.children ?? [])[0], 'ApplicationData'), 'Body')!;
    expect(['1', '2']).toContain(textOf(body, 'Type'));
  });

  it('a read change from the device on a message changed on the server since: the server wins and its state comes back', async () => {
    const { d, folders } = await device('CONFLICTTRAP', 'iPhone');
    await sync(d, folders.Inbox, 0);
    const filled = await sync(d, folders.Inbox, 1);
    const list = (await stack.call('GET', `/api/mail/messages?folderUid=${folders.Inbox}`, s.alice)).body as Array<{
      uid: string;
      version: number;
      seen: boolean;
    }>;
    const m = list.find((x) => !x.seen)!;
    expect((await stack.call('PUT', `/api/mail/messages/${m.uid}`, s.alice, { flagged: true, version: m.version })).status).toBe(200);
    const r = await sync(d, folders.Inbox, filled.key, [
      as('Commands', [as('Change', [as('ServerId', m.uid), as('ApplicationData', [ns('Email')('Read', '1')])])]),
    ]);
    const responses = kid(r.c, 'Responses')?.children ?? [];
    expect(responses.map((x) => [x.tag, textOf(x, 'ServerId'), textOf(x, 'Status')])).toEqual([['Change', m.uid, '7']]);
    const back = (kid(r.c, 'Commands')?.children ?? []).find((x) => textOf(x, 'ServerId') === m.uid)!;
    expect(textOf(kid(back, 'ApplicationData'), 'Read')).toBe('0');
    expect((await stack.call('GET', `/api/mail/messages/${m.uid}`, s.alice)).body).toMatchObject({ seen: false, flagged: true });
  });

  it('folders made, deleted or renamed on the device are refused with Status 3 (not retried), nothing changes', async () => {
    const { d, folders, folderKey } = await device('FOLDERTRAP', 'iPhone');
    const before = (await stack.call('GET', `/api/mail/folders?mailboxUid=${s.aliceBox}`, s.alice)).body.length;
    for (const [cmd, kids] of [
      ['FolderCreate', [fh('SyncKey', folderKey), fh('ParentId', '0'), fh('DisplayName', 'From phone'), fh('Type', '12')]],
      ['FolderUpdate', [fh('SyncKey', folderKey), fh('ServerId', folders.Inbox), fh('ParentId', '0'), fh('DisplayName', 'Renamed')]],
      ['FolderDelete', [fh('SyncKey', folderKey), fh('ServerId', folders.Inbox)]],
    ] as const) {
      const r = await d.send(cmd, fh(cmd, [...kids]));
      expect([cmd, r.status, textOf(r.tree!, 'Status')]).toEqual([cmd, 200, '3']);
    }
    expect((await stack.call('GET', `/api/mail/folders?mailboxUid=${s.aliceBox}`, s.alice)).body.length).toBe(before);
  });

  it('a Ping without folders after one with folders reuses the last set, and ends the older Ping', async () => {
    const { d, folders } = await device('PINGTRAP', 'iPhone');
    await sync(d, folders.Inbox, 0);
    expect((await sync(d, folders.Inbox, 1)).adds).toBeGreaterThan(0);
    // Nothing waits (the device holds everything), so the first Ping parks.
    const first = d.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '600'), pg('Folders', [pg('Folder', [pg('Id', folders.Inbox), pg('Class', 'Email')])])]),
    );
    await new Promise((r) => setTimeout(r, 300));
    const second = d.send('Ping', null); // the same folders and heartbeat
    const ended = await first;
    expect(textOf(ended.tree!, 'Status')).toBe('1'); // replaced by the newer Ping, at once
    await new Promise((r) => setTimeout(r, 300));
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(9));
    const woke = await second;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
    expect(kids(kid(woke.tree!, 'Folders'), 'Folder').map((f) => f.text)).toEqual([folders.Inbox]);
  });
});
