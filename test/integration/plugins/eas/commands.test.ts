// GetItemEstimate, MoveItems, ItemOperations and Settings against the real protocols app, on both
// SQL engines: each answer checked against the mailbox through the HTTP API, each refusal with the
// documented status and nothing changed, every WBXML body decoded by libwbxml and Horde.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { autodiscoverPlugin, easPlugin } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, asb, crossDecode, Device, fh, ge, io, kid, kids, mv, ns, pv, textOf } from './_client.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');
const st = ns('Settings');

const withAttachment = (subject: string) =>
  [
    'From: carol@example.net',
    'To: alice@example.test',
    `Subject: ${subject}`,
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <${subject.replace(/\W/g, '')}-${Date.now()}@x>`,
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="b1"',
    '',
    '--b1',
    'Content-Type: text/plain; charset=utf-8',
    '',
    `The text of ${subject}.`,
    '--b1',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from('%PDF-1.4 pretend').toString('base64'),
    '--b1--',
    '',
  ].join('\r\n');

describe.each(backends)('mobile-sync commands ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let d: Device;
  const folders: Record<string, string> = {};
  let key = 0;
  const sync = async (window = 50) => {
    const r = await d.send(
      'Sync',
      as('Sync', [
        as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', folders.Inbox), as('WindowSize', window)])]),
      ]),
    );
    const c = kid(kid(r.tree!, 'Collections'), 'Collection')!;
    key = Number(textOf(c, 'SyncKey'));
    return c;
  };
  const inboxList = async () =>
    (await stack.call('GET', `/api/mail/messages?folderUid=${folders.Inbox}`, s.alice)).body as Array<{
      uid: string;
      subject: string;
      attachments: Array<{ id: string }>;
    }>;

  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin] });
    s = await seed(stack);
    d = new Device(stack.protocols, `Bearer ${s.alice}`, 'CMDS1', 'Outlook', '16.0');
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    for (const a of kids(kid(fs.tree!, 'Changes'), 'Add')) folders[textOf(a, 'DisplayName')!] = textOf(a, 'ServerId')!;
    await sync(); // key 0 → 1
  }, 60_000);
  afterAll(async () => stack?.close());

  it('GetItemEstimate counts what the next Sync brings; an unknown collection and an unprimed one say so', async () => {
    for (const n of [1, 2]) await deliverRaw({ deps: stack.deps } as never, s.aliceBox, withAttachment(`estimate ${n}`));
    const ask = (id: string, k: number | string) =>
      d.send('GetItemEstimate', ge('GetItemEstimate', [ge('Collections', [ge('Collection', [as('SyncKey', k), ge('CollectionId', id)])])]));
    const r = await ask(folders.Inbox, key);
    const resp = kid(r.tree!, 'Response')!;
    expect(textOf(resp, 'Status')).toBe('1');
    expect(textOf(kid(resp, 'Collection'), 'Estimate')).toBe('2');
    expect(textOf(kid((await ask('nope', key)).tree!, 'Response'), 'Status')).toBe('2');
    expect(textOf(kid((await ask(folders['Sent Items'], 1)).tree!, 'Response'), 'Status')).toBe('3');
    expect(textOf(kid((await ask(folders.Inbox, key + 5)).tree!, 'Response'), 'Status')).toBe('4');
    await sync();
    expect(textOf(kid(kid((await ask(folders.Inbox, key)).tree!, 'Response'), 'Collection'), 'Estimate')).toBe('0');
  });

  it('ItemOperations fetches a whole message as MIME and an attachment by its FileReference; unknown ones say not found', async () => {
    const [m] = (await inboxList()).filter((x) => x.subject === 'estimate 1');
    const fetch = (children: ReturnType<typeof io>[]) => d.send('ItemOperations', io('ItemOperations', children));
    const whole = await fetch([
      io('Fetch', [
        io('Store', 'Mailbox'),
        as('CollectionId', folders.Inbox),
        as('ServerId', m.uid),
        io('Options', [as('MIMESupport', '2'), asb('BodyPreference', [asb('Type', '4')])]),
      ]),
    ]);
    const f = kid(kid(whole.tree!, 'Response'), 'Fetch')!;
    expect(textOf(f, 'Status')).toBe('1');
    const body = kid(kid(f, 'Properties'), 'Body')!;
    expect(textOf(body, 'Type')).toBe('4');
    expect(textOf(body, 'Data')).toContain('Subject: estimate 1');
    const ref = textOf(kid(kid(kid(f, 'Properties'), 'Attachments'), 'Attachment'), 'FileReference')!;
    expect(ref).toBe(`${m.uid}:${m.attachments[0].id}`);
    const att = kid(kid((await fetch([io('Fetch', [io('Store', 'Mailbox'), asb('FileReference', ref)])])).tree!, 'Response'), 'Fetch')!;
    expect(textOf(att, 'Status')).toBe('1');
    expect(Buffer.from(textOf(kid(att, 'Properties'), 'Data')!, 'base64').toString()).toBe('%PDF-1.4 pretend');
    const bad = await fetch([
      io('Fetch', [io('Store', 'Mailbox'), asb('FileReference', `${m.uid}:99`)]),
      io('Fetch', [io('Store', 'Mailbox'), as('CollectionId', folders.Inbox), as('ServerId', 'no-such-item')]),
      io('Fetch', [io('Store', 'DocumentLibrary'), as('ServerId', 'x')]),
    ]);
    expect(kids(kid(bad.tree!, 'Response'), 'Fetch').map((x) => textOf(x, 'Status'))).toEqual(['15', '6', '9']);
    // Another user's device cannot fetch alice's attachment.
    const bob = new Device(stack.protocols, `Bearer ${s.bob}`, 'CMDSBOB');
    await bob.provision(pv);
    const stolen = await bob.send(
      'ItemOperations',
      io('ItemOperations', [io('Fetch', [io('Store', 'Mailbox'), asb('FileReference', ref)])]),
    );
    expect(textOf(kid(kid(stolen.tree!, 'Response'), 'Fetch'), 'Status')).toBe('15');
    expect(textOf(kid(kid(stolen.tree!, 'Response'), 'Fetch'), 'Properties')).toBeUndefined();
    d.wire.push(...bob.wire);
  });

  it('MoveItems moves a message and the next Sync of the source does not send it back as a delete', async () => {
    const [m] = (await inboxList()).filter((x) => x.subject === 'estimate 2');
    const move = (src: string, from: string, to: string) =>
      d.send('MoveItems', mv('MoveItems', [mv('Move', [mv('SrcMsgId', src), mv('SrcFldId', from), mv('DstFldId', to)])]));
    const r = await move(m.uid, folders.Inbox, folders.Projects ?? folders.Archive);
    const resp = kid(r.tree!, 'Response')!;
    expect(textOf(resp, 'Status')).toBe('3');
    expect(textOf(resp, 'DstMsgId')).toBe(m.uid);
    expect((await stack.call('GET', `/api/mail/messages/${m.uid}`, s.alice)).body.folderUid).toBe(folders.Projects ?? folders.Archive);
    expect(kid(await sync(), 'Commands')).toBeUndefined();
    const statuses = await Promise.all([
      move(m.uid, folders.Inbox, folders.Archive), // no longer there
      move(m.uid, folders.Archive, 'nowhere'),
      move(m.uid, folders.Archive, folders.Archive),
    ]);
    expect(statuses.map((x) => textOf(kid(x.tree!, 'Response'), 'Status'))).toEqual(['1', '2', '4']);
  });

  it('Settings: the out-of-office reply round trips with the mailbox, UserInformation names its address, DeviceInformation is stored', async () => {
    const set = await d.send(
      'Settings',
      st('Settings', [
        st('Oof', [
          st('Set', [
            st('OofState', '2'),
            st('StartTime', '2026-12-20T00:00:00.000Z'),
            st('EndTime', '2027-01-05T00:00:00.000Z'),
            st('OofMessage', [st('AppliesToInternal'), st('Enabled', '1'), st('ReplyMessage', 'Back in January.'), st('BodyType', 'TEXT')]),
          ]),
        ]),
        st('DeviceInformation', [st('Set', [st('Model', 'Outlook'), st('OS', 'Windows 11'), st('FriendlyName', 'Work laptop')])]),
      ]),
    );
    expect(textOf(set.tree!, 'Status')).toBe('1');
    expect(textOf(kid(set.tree!, 'Oof'), 'Status')).toBe('1');
    const get = await d.send(
      'Settings',
      st('Settings', [st('Oof', [st('Get', [st('BodyType', 'TEXT')])]), st('UserInformation', [st('Get')])]),
    );
    const oof = kid(kid(get.tree!, 'Oof'), 'Get')!;
    expect(textOf(oof, 'OofState')).toBe('2');
    expect(textOf(oof, 'StartTime')).toBe('2026-12-20T00:00:00.000Z');
    expect(kids(oof, 'OofMessage').map((x) => textOf(x, 'ReplyMessage'))).toEqual([
      'Back in January.',
      'Back in January.',
      'Back in January.',
    ]);
    const account = kid(kid(kid(kid(get.tree!, 'UserInformation'), 'Get'), 'Accounts'), 'Account')!;
    expect(textOf(kid(account, 'EmailAddresses'), 'PrimarySmtpAddress')).toBe('alice@example.test');
    const devices = (await stack.call('GET', '/api/mail/devices', s.alice)).body as Array<{ deviceId: string; deviceInfo: object }>;
    expect(devices.find((x) => x.deviceId === 'CMDS1')!.deviceInfo).toEqual({
      Model: 'Outlook',
      OS: 'Windows 11',
      FriendlyName: 'Work laptop',
    });
    const bad = await d.send(
      'Settings',
      st('Settings', [st('Oof', [st('Set', [st('OofState', '7')])]), st('DevicePassword', [st('Set', [st('Password', 'x')])])]),
    );
    expect([textOf(kid(bad.tree!, 'Oof'), 'Status'), textOf(kid(bad.tree!, 'DevicePassword'), 'Status')]).toEqual(['5', '7']);
    const off = await d.send('Settings', st('Settings', [st('Oof', [st('Set', [st('OofState', '0')])])]));
    expect(textOf(kid(off.tree!, 'Oof'), 'Status')).toBe('1');
    const again = await d.send('Settings', st('Settings', [st('Oof', [st('Get', [st('BodyType', 'TEXT')])])]));
    expect(textOf(kid(kid(again.tree!, 'Oof'), 'Get'), 'OofState')).toBe('0');
  });

  it('ItemOperations EmptyFolderContents empties Deleted Items', async () => {
    const [m] = (await inboxList()).filter((x) => x.subject === 'estimate 1');
    await stack.call('POST', `/api/mail/messages/${m.uid}/trash`, s.alice, {});
    const r = await d.send(
      'ItemOperations',
      io('ItemOperations', [io('EmptyFolderContents', [as('CollectionId', folders['Deleted Items'])])]),
    );
    expect(textOf(kid(kid(r.tree!, 'Response'), 'EmptyFolderContents'), 'Status')).toBe('1');
    expect((await stack.call('GET', `/api/mail/messages?folderUid=${folders['Deleted Items']}`, s.alice)).body).toEqual([]);
  });

  it('Sync writes each body in the preferred format, sanitized, and says what the message itself is (NativeBodyType)', async () => {
    const raw = (subject: string, type: string, body: string) =>
      [
        `From: carol@example.net`,
        'To: alice@example.test',
        `Subject: ${subject}`,
        'MIME-Version: 1.0',
        `Content-Type: ${type}; charset=utf-8`,
        '',
        body,
        '',
      ].join('\r\n');
    await deliverRaw(
      { deps: stack.deps } as never,
      s.aliceBox,
      raw('body html', 'text/html', '<p>Hi <b>there</b></p><script>alert(1)</script>'),
    );
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, raw('body plain', 'text/plain', 'Just text.'));
    const bodies = async (id: string, type: string) => {
      const dev = new Device(stack.protocols, `Bearer ${s.alice}`, id, 'iPhone', '16.1');
      await dev.provision(pv);
      await dev.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
      const round = (k: number) =>
        dev.send(
          'Sync',
          as('Sync', [
            as('Collections', [
              as('Collection', [
                as('SyncKey', k),
                as('CollectionId', folders.Inbox),
                as('WindowSize', 100),
                as('Options', [asb('BodyPreference', [asb('Type', type)])]),
              ]),
            ]),
          ]),
        );
      await round(0);
      const c = kid(kid((await round(1)).tree!, 'Collections'), 'Collection')!;
      const out: Record<string, { type?: string; data?: string; native?: string }> = {};
      for (const add of kids(kid(c, 'Commands'), 'Add')) {
        const data = kid(add, 'ApplicationData')!;
        const subject = textOf(data, 'Subject')!;
        if (subject.startsWith('body '))
          out[subject] = {
            type: textOf(kid(data, 'Body'), 'Type'),
            data: textOf(kid(data, 'Body'), 'Data'),
            native: textOf(data, 'NativeBodyType'),
          };
      }
      return out;
    };
    const html = await bodies('BODIESHTML', '2');
    expect(html['body html']).toMatchObject({ type: '2', native: '2' });
    expect(html['body html'].data).toContain('<b>there</b>');
    expect(html['body html'].data).not.toContain('script');
    expect(html['body plain']).toEqual({ type: '1', data: 'Just text.\n', native: '1' });
    // A device that reads plain text gets the text made from an HTML-only message.
    const text = await bodies('BODIESTEXT', '1');
    expect(text['body html']).toMatchObject({ type: '1', native: '2' });
    expect(text['body html'].data).toMatch(/Hi\s+THERE|Hi\s+there/);
    expect(text['body plain']).toEqual({ type: '1', data: 'Just text.\n', native: '1' });
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer with no unknown tag', () => {
    expect(crossDecode(d.wire)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
