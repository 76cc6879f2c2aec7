// A mobile device's session against the real protocols app (the eas plugin on the plugin host),
// on both SQL engines: OPTIONS → Provision (two steps) → FolderSync → Sync from 0 → mail filed →
// Ping wakes → Sync gets the Add → read, flag and delete from the device → server-side changes →
// remote wipe at the next Provision. Every request and answer is also decoded by libwbxml's
// wbxml2xml and Horde's ActiveSync decoder, which must know every tag.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { easPlugin, autodiscoverPlugin, EasDeviceModel } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, asb, crossDecode, Device, fh, kid, kids, ns, pg, pv, textOf } from './_client.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');

const em = ns('Email');

const mail = (n: number, subject = `Hello ${n}`) =>
  `From: "Carol" <carol@example.net>\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nDate: ${new Date(Date.UTC(2026, 10, 20, 10, n)).toUTCString()}\r\nMessage-ID: <eas-${n}-${Date.now()}@example.net>\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of message ${n}, which is long enough to be cut.\r\n`;

const syncRequest = (collectionId: string, key: string | number, extra: ReturnType<typeof as>[] = [], window = 2) =>
  as('Sync', [
    as('Collections', [
      as('Collection', [
        as('SyncKey', key),
        as('CollectionId', collectionId),
        as('DeletesAsMoves', '1'),
        as('GetChanges', '1'),
        as('WindowSize', window),
        as('Options', [as('FilterType', '0'), asb('BodyPreference', [asb('Type', '1'), asb('TruncationSize', '20')])]),
        ...extra,
      ]),
    ]),
  ]);

const collectionOf = (tree: ReturnType<typeof as> | null) => kid(kid(tree!, 'Collections'), 'Collection')!;
const commandsOf = (tree: ReturnType<typeof as> | null) => kid(collectionOf(tree), 'Commands')?.children ?? [];

describe.each(backends)('a mobile device session ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let device: Device;
  let inbox = '';
  let trash = '';
  const wire: Buffer[] = [];
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin], values: { 'mail:eas:max_request_bytes': 1024 * 1024 } });
    s = await seed(stack);
    device = new Device(stack.protocols, `Bearer ${s.alice}`);
  }, 60_000);
  afterAll(async () => {
    wire.push(...(device?.wire ?? []));
    await stack?.close();
  });

  it('OPTIONS answers the versions and commands in both header spellings, at both paths in any case, without sign-in', async () => {
    for (const path of ['/Microsoft-Server-ActiveSync', '/Vendor-Server-ActiveSync', '/microsoft-server-activesync']) {
      const r = await fetch(stack.protocols + path, { method: 'OPTIONS' });
      expect(r.status, path).toBe(200);
      expect(r.headers.get('ms-asprotocolversions')).toBe('14.0,14.1,16.0,16.1');
      expect(r.headers.get('vendor-asprotocolversions')).toBe('14.0,14.1,16.0,16.1');
      const commands = r.headers.get('ms-asprotocolcommands')!.split(',');
      expect(commands).toEqual(expect.arrayContaining(['Provision', 'FolderSync', 'Sync', 'Ping', 'ItemOperations', 'Settings']));
      expect(commands).not.toContain('Find'); // unsupported by the specification: not advertised
      expect(r.headers.get('vendor-asprotocolcommands')).toBe(commands.join(','));
    }
  });

  it('refuses what it cannot serve with a clear status, and stores nothing', async () => {
    const base64 = await fetch(`${stack.protocols}/Microsoft-Server-ActiveSync?jAAJBAp2MTQwRGV2aWNl`, {
      method: 'POST',
      headers: { authorization: `Bearer ${s.alice}` },
    });
    expect(base64.status).toBe(400);
    expect(await base64.json()).toMatchObject({ code: 'api-106', message: expect.stringMatching(/base64-encoded query form/) });
    const old = await new Device(stack.protocols, `Bearer ${s.alice}`, 'DEVOLD', 'Android', '12.1').send('FolderSync', null);
    expect(old.status).toBe(400);
    expect(old.text).toMatch(/12\.1 is not offered/);
    const broken = await device.send('FolderSync', null, { raw: Buffer.from([0x03, 0x01, 0x6a, 0x00, 0x00, 0x07, 0x56, 0x52]) });
    expect(broken.status).toBe(400);
    expect(JSON.parse(broken.text)).toMatchObject({ code: 'api-106', message: expect.stringMatching(/Malformed WBXML/) });
    const huge = await device.send('SendMail', null, { raw: Buffer.alloc(1024 * 1024 + 1, 0x41) });
    expect(huge.status).toBe(413);
    expect(JSON.parse(huge.text)).toMatchObject({ code: 'api-110', status: 413 });
    const unknownCmd = await device.send('Find', null);
    expect(unknownCmd.status).toBe(501);
    const noAuth = await fetch(`${stack.protocols}/Microsoft-Server-ActiveSync?Cmd=Sync&DeviceId=X1&DeviceType=t`, { method: 'POST' });
    expect(noAuth.status).toBe(401);
    // Nothing stored for the refused requests but the device record the malformed one's sender has.
    expect(await stack.deps.store.repo(EasDeviceModel).count({ deviceId: 'DEVOLD' })).toBe(0);
  });

  it('a device that has not provisioned is sent to Provision (142), a wrong key too (144)', async () => {
    const r = await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    expect(textOf(r.tree!, 'Status')).toBe('142');
    await device.provision(pv);
    const good = device.policyKey;
    device.policyKey = good + 1;
    expect(textOf((await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]))).tree!, 'Status')).toBe('144');
    device.policyKey = good;
  });

  it('FolderSync from 0 lists the folders with their types; again with the new key: no changes', async () => {
    const r = await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    expect(textOf(r.tree!, 'Status')).toBe('1');
    const adds = kids(kid(r.tree!, 'Changes'), 'Add');
    const byType = Object.fromEntries(adds.map((a) => [textOf(a, 'DisplayName'), textOf(a, 'Type')]));
    expect(byType).toMatchObject({ Inbox: '2', Drafts: '3', 'Deleted Items': '4', 'Sent Items': '5', Outbox: '6' });
    inbox = textOf(
      adds.find((a) => textOf(a, 'Type') === '2'),
      'ServerId',
    )!;
    trash = textOf(
      adds.find((a) => textOf(a, 'Type') === '4'),
      'ServerId',
    )!;
    const key = textOf(r.tree!, 'SyncKey');
    const again = await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', key!)]));
    expect(textOf(again.tree!, 'SyncKey')).toBe(key);
    expect(textOf(kid(again.tree!, 'Changes'), 'Count')).toBe('0');
    // A folder made on the server shows up as an Add with the next key; an unknown key is status 9.
    expect((await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Projects' })).status).toBe(201);
    const later = await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', key!)]));
    expect(kids(kid(later.tree!, 'Changes'), 'Add').map((a) => textOf(a, 'DisplayName'))).toEqual(['Projects']);
    expect(Number(textOf(later.tree!, 'SyncKey'))).toBe(Number(key) + 1);
    expect(textOf((await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '99')]))).tree!, 'Status')).toBe('9');
  });

  it('Sync from 0, then the mail in windows with MoreAvailable, newest first; a repeated key gets the same answer', async () => {
    for (let n = 1; n <= 3; n++) await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(n));
    const zero = await device.send('Sync', syncRequest(inbox, 0));
    expect(textOf(collectionOf(zero.tree), 'SyncKey')).toBe('1');
    expect(textOf(collectionOf(zero.tree), 'Status')).toBe('1');
    const first = await device.send('Sync', syncRequest(inbox, 1));
    const c1 = collectionOf(first.tree);
    expect(textOf(c1, 'SyncKey')).toBe('2');
    expect(kid(c1, 'MoreAvailable')).toBeDefined();
    const adds = commandsOf(first.tree).filter((x) => x.tag === 'Add');
    expect(adds.map((a) => textOf(kid(a, 'ApplicationData'), 'Subject'))).toEqual(['Hello 3', 'Hello 2']);
    const body = kid(kid(adds[0], 'ApplicationData'), 'Body')!;
    expect(textOf(body, 'Type')).toBe('1');
    expect(textOf(body, 'Truncated')).toBe('1');
    expect(Buffer.byteLength(textOf(body, 'Data')!)).toBeLessThanOrEqual(20);
    expect(textOf(kid(adds[0], 'ApplicationData'), 'Read')).toBe('0');
    // The answer was lost: the device repeats key 1 and gets the same items, not the next ones.
    const repeat = await device.send('Sync', syncRequest(inbox, 1));
    expect(commandsOf(repeat.tree).map((a) => textOf(a, 'ServerId'))).toEqual(adds.map((a) => textOf(a, 'ServerId')));
    const second = await device.send('Sync', syncRequest(inbox, 2));
    expect(commandsOf(second.tree).map((a) => textOf(kid(a, 'ApplicationData'), 'Subject'))).toEqual(['Hello 1']);
    expect(kid(collectionOf(second.tree), 'MoreAvailable')).toBeUndefined();
    expect(textOf(collectionOf(await device.send('Sync', syncRequest(inbox, 7)).then((r) => r.tree)), 'Status')).toBe('3');
  });

  it('read, flag and delete from the device reach the mailbox; server changes come back as Change and Delete', async () => {
    const list = await stack.call('GET', `/api/mail/messages?folderUid=${inbox}`, s.alice);
    const [m1, m2, m3] = (list.body as Array<{ uid: string; subject: string }>).sort((a, b) => a.subject.localeCompare(b.subject));
    const r = await device.send(
      'Sync',
      syncRequest(inbox, 3, [
        as('Commands', [
          as('Change', [as('ServerId', m1.uid), as('ApplicationData', [em('Read', '1'), em('Flag', [em('FlagStatus', '2')])])]),
          as('Delete', [as('ServerId', m2.uid)]),
        ]),
      ]),
    );
    expect(textOf(collectionOf(r.tree), 'Status')).toBe('1');
    expect(commandsOf(r.tree)).toEqual([]); // its own changes are not sent back
    const after = await stack.call('GET', `/api/mail/messages/${m1.uid}`, s.alice);
    expect(after.body).toMatchObject({ seen: true, flagged: true });
    expect((await stack.call('GET', `/api/mail/messages/${m2.uid}`, s.alice)).body).toMatchObject({ folderUid: trash });
    // On the server: m3 read through the API, m1 deleted for good.
    const m3now = (await stack.call('GET', `/api/mail/messages/${m3.uid}`, s.alice)).body;
    expect((await stack.call('PUT', `/api/mail/messages/${m3.uid}`, s.alice, { seen: true, version: m3now.version })).status).toBe(200);
    const m1now = (await stack.call('GET', `/api/mail/messages/${m1.uid}`, s.alice)).body;
    expect((await stack.call('DELETE', `/api/mail/messages/${m1.uid}?version=${m1now.version}`, s.alice)).status).toBe(204);
    const next = await device.send('Sync', syncRequest(inbox, 4));
    const cmds = commandsOf(next.tree);
    expect(cmds.map((c) => [c.tag, textOf(c, 'ServerId')])).toEqual([
      ['Delete', m1.uid],
      ['Change', m3.uid],
    ]);
    expect(textOf(kid(cmds[1], 'ApplicationData'), 'Read')).toBe('1');
    // Another user's device cannot reach alice's folder: 404-like status 8, nothing read.
    const bobDevice = new Device(stack.protocols, `Bearer ${s.bob}`, 'BOB1');
    await bobDevice.provision(pv);
    expect(textOf(collectionOf((await bobDevice.send('Sync', syncRequest(inbox, 0))).tree), 'Status')).toBe('8');
    wire.push(...bobDevice.wire);
    // Neither does an elevated administrator's device: trusted roles are stripped, the folder is not theirs.
    const adminDevice = new Device(stack.protocols, `Bearer ${s.admin}`, 'ADMIN1');
    expect((await adminDevice.send('Provision', pv('Provision', []))).status).toBe(404); // no mailbox of their own: nothing to sync
    const own = { address: 'root@example.test', owners: ['root'], name: 'root' };
    expect((await stack.call('POST', '/api/mail/mailboxes', s.admin, own)).status).toBe(201);
    await adminDevice.provision(pv);
    expect(textOf(collectionOf((await adminDevice.send('Sync', syncRequest(inbox, 0))).tree), 'Status')).toBe('8');
    const ping = await adminDevice.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '60'), pg('Folders', [pg('Folder', [pg('Id', inbox), pg('Class', 'Email')])])]),
    );
    expect(textOf(ping.tree!, 'Status')).toBe('7'); // not a folder FolderSync gave it
    wire.push(...adminDevice.wire);
  });

  it('Ping answers at once when mail is waiting, parks until mail arrives, and checks its bounds', async () => {
    const key = Number(textOf(collectionOf((await device.send('Sync', syncRequest(inbox, 5))).tree), 'SyncKey'));
    expect(key).toBe(6);
    const tooShort = await device.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '5'), pg('Folders', [pg('Folder', [pg('Id', inbox), pg('Class', 'Email')])])]),
    );
    expect(textOf(tooShort.tree!, 'Status')).toBe('5');
    expect(textOf(tooShort.tree!, 'HeartbeatInterval')).toBe('60');
    const parked = device.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '120'), pg('Folders', [pg('Folder', [pg('Id', inbox), pg('Class', 'Email')])])]),
    );
    await new Promise((r) => setTimeout(r, 300));
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(9, 'Pinged'));
    const woke = await parked;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
    expect(kids(kid(woke.tree!, 'Folders'), 'Folder').map((f) => f.text)).toEqual([inbox]);
    // A Ping without folders reuses the last set: mail is waiting, so it answers at once.
    expect(textOf((await device.send('Ping', null)).tree!, 'Status')).toBe('2');
    const got = await device.send('Sync', syncRequest(inbox, key));
    expect(commandsOf(got.tree).map((a) => textOf(kid(a, 'ApplicationData'), 'Subject'))).toEqual(['Pinged']);
  });

  it('a remote wipe is delivered at the next Provision and recorded when the device acknowledges it', async () => {
    const rec = (await stack.deps.store.repo<{ wipe: string }>(EasDeviceModel).findOne({ userUid: 'alice', deviceId: device.id }))!;
    await stack.deps.store.repo(EasDeviceModel).update(rec.uid, { wipe: 'requested' });
    expect(textOf((await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]))).tree!, 'Status')).toBe('140');
    const p = await device.send(
      'Provision',
      pv('Provision', [pv('Policies', [pv('Policy', [pv('PolicyType', 'MS-EAS-Provisioning-WBXML')])])]),
    );
    expect(kid(p.tree!, 'RemoteWipe')).toBeDefined();
    const ack = await device.send('Provision', pv('Provision', [pv('RemoteWipe', [pv('Status', '1')])]));
    expect(textOf(ack.tree!, 'Status')).toBe('1');
    expect((await stack.deps.store.repo<{ wipe: string }>(EasDeviceModel).get(rec.uid))!.wipe).toBe('wiped');
  });

  it('a repeated key gets the saved round with its items as they are now; a saved round that is not an outline sends the device back to 0', async () => {
    const folder = (await stack.call('POST', '/api/mail/folders', s.alice, { mailboxUid: s.aliceBox, name: 'Replay' })).body.uid as string;
    for (const n of [1, 2]) await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(40 + n, `Replay ${n}`));
    const inInbox = (await stack.call('GET', `/api/mail/messages?folderUid=${inbox}`, s.alice)).body as Array<{
      uid: string;
      subject: string;
    }>;
    const uidOf = (subject: string) => inInbox.find((m) => m.subject === subject)!.uid;
    for (const subject of ['Replay 1', 'Replay 2'])
      expect((await stack.call('POST', `/api/mail/messages/${uidOf(subject)}/move`, s.alice, { folderUid: folder })).status).toBe(200);
    const dev = new Device(stack.protocols, `Bearer ${s.alice}`, 'REPLAY1');
    await dev.provision(pv);
    await dev.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    await dev.send('Sync', syncRequest(folder, 0, [], 5));
    const first = await dev.send('Sync', syncRequest(folder, 1, [], 5));
    const subjects = (tree: ReturnType<typeof as> | null) =>
      commandsOf(tree).map((a) => [a.tag, textOf(kid(a, 'ApplicationData'), 'Subject'), textOf(kid(a, 'ApplicationData'), 'Read')]);
    expect(subjects(first.tree)).toEqual([
      ['Add', 'Replay 2', '0'],
      ['Add', 'Replay 1', '0'],
    ]);
    // The answer is lost; meanwhile Replay 2 is read and Replay 1 moved to Deleted Items on the server.
    const r2 = (await stack.call('GET', `/api/mail/messages/${uidOf('Replay 2')}`, s.alice)).body;
    expect((await stack.call('PUT', `/api/mail/messages/${r2.uid}`, s.alice, { seen: true, version: r2.version })).status).toBe(200);
    expect((await stack.call('POST', `/api/mail/messages/${uidOf('Replay 1')}/trash`, s.alice, {})).status).toBe(200);
    const again = await dev.send('Sync', syncRequest(folder, 1, [], 5));
    expect(textOf(collectionOf(again.tree), 'SyncKey')).toBe('2');
    expect(subjects(again.tree)).toEqual([['Add', 'Replay 2', '1']]);
    // The next round tells the device what it was never sent is gone.
    const next = await dev.send('Sync', syncRequest(folder, 2, [], 5));
    expect(
      commandsOf(next.tree)
        .filter((c) => c.tag === 'Delete')
        .map((c) => textOf(c, 'ServerId')),
    ).toEqual([uidOf('Replay 1')]);
    // A saved round in another shape (as an older build stored whole answers): the key is stale.
    const { EasCollectionModel } = await import('../../../../lib/plugins/device-models.js');
    const repo = stack.deps.store.repo<{ folderUid: string; previousAnswer: string }>(EasCollectionModel);
    const saved = (await repo.list({ filter: { folderUid: folder }, limit: 10 }))[0];
    await repo.update(saved.uid, { previousAnswer: JSON.stringify({ tag: 'Collection', children: [] }) });
    expect(textOf(collectionOf((await dev.send('Sync', syncRequest(folder, 2, [], 5))).tree), 'Status')).toBe('3');
    wire.push(...dev.wire);
  });

  it('an empty Sync repeats the last full one at the keys the collections hold now; with none yet it asks for the whole request (13)', async () => {
    const dev = new Device(stack.protocols, `Bearer ${s.alice}`, 'EMPTYSYNC1');
    await dev.provision(pv);
    await dev.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    expect(textOf((await dev.send('Sync', null)).tree!, 'Status')).toBe('13');
    await dev.send('Sync', syncRequest(inbox, 0, [], 100));
    let key = 1;
    for (let more = true; more; key++)
      more = kid(collectionOf((await dev.send('Sync', syncRequest(inbox, key, [], 100))).tree), 'MoreAvailable') !== undefined;
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail(60, 'After the empty Sync'));
    const again = await dev.send('Sync', null);
    const c = collectionOf(again.tree);
    expect([textOf(c, 'Status'), textOf(c, 'SyncKey')]).toEqual(['1', String(key + 1)]);
    expect(commandsOf(again.tree).map((a) => textOf(kid(a, 'ApplicationData'), 'Subject'))).toEqual(['After the empty Sync']);
    // The kept request's options stay: the body is still cut at 20 bytes.
    expect(Buffer.byteLength(textOf(kid(kid(commandsOf(again.tree)[0], 'ApplicationData'), 'Body'), 'Data')!)).toBeLessThanOrEqual(20);
    wire.push(...dev.wire);
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer of the session with no unknown tag', () => {
    const all = [...wire, ...device.wire];
    expect(all.length).toBeGreaterThan(20);
    expect(crossDecode(all)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
