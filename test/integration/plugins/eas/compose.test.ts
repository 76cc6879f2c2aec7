// SendMail, SmartReply and SmartForward from a mobile device against the real protocols app, on both
// SQL engines: the message goes through the common send path (alice's Sent Items, bob's Inbox once
// the scan job has filed it), replies quote and thread, forwards attach the original, ReplaceMime
// sends the device's message as it is, refusals answer a ComposeMail Status and send nothing, a
// repeated ClientId is not sent twice, and iOS's NEEDS-ACTION invitation replies are swallowed.
// Every WBXML body exchanged is also decoded by libwbxml and Horde.
import { simpleParser } from 'mailparser';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainQueue } from '../../../../lib/jobs/index.js';
import { loadRaw } from '../../../../lib/mail/index.js';
import { easPlugin } from '../../../../lib/plugins/index.js';
import { sendControlHooks, sendDepsOf } from '../../../../lib/send/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { messagesIn } from '../../send/helpers.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { cm, crossDecode, Device, fh, kid, kids, pv, textOf, type Exchange } from './_client.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');

let n = 0;
const mime = (o: { from?: string | null; to?: string; subject: string; body?: string; extra?: string[]; type?: string }) =>
  [
    ...(o.from === null ? [] : [`From: ${o.from ?? 'Alice <alice@example.test>'}`]),
    ...(o.to === '' ? [] : [`To: ${o.to ?? 'bob@example.test'}`]),
    `Subject: ${o.subject}`,
    `Date: ${new Date().toUTCString()}`,
    'MIME-Version: 1.0',
    ...(o.extra ?? []),
    `Content-Type: ${o.type ?? 'text/plain; charset=utf-8'}`,
    '',
    o.body ?? `Body of ${o.subject}.`,
    '',
  ].join('\r\n');

type El = ReturnType<typeof cm>;
const request = (
  cmd: 'SendMail' | 'SmartReply' | 'SmartForward',
  raw: string,
  opts: { clientId?: string; save?: boolean; source?: El[]; replace?: boolean; asText?: boolean } = {},
) =>
  cm(cmd, [
    cm('ClientId', opts.clientId ?? `c${++n}-${Date.now()}`),
    ...(opts.save === false ? [] : [cm('SaveInSentItems')]),
    ...(opts.source ? [cm('Source', opts.source)] : []),
    ...(opts.replace ? [cm('ReplaceMime')] : []),
    cm('Mime', opts.asText ? raw : Buffer.from(raw)),
  ]);

const ok = (x: Exchange) => {
  expect(x.status, x.text).toBe(200);
  expect(x.tree).toBeNull();
  expect(x.text).toBe('');
};
const statusOf = (x: Exchange, root: string) => {
  expect(x.status).toBe(200);
  expect(x.tree!.tag).toBe(root);
  return Number(textOf(x.tree!, 'Status'));
};

describe.each(backends)('mobile sync SendMail, SmartReply, SmartForward ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let device: Device;
  let inbox = '';
  let original = '';
  const origId = `<orig-${Date.now()}@example.test>`;
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [easPlugin] });
    s = await seed(stack);
    device = new Device(stack.protocols, `Bearer ${s.alice}`, 'COMPOSE1', 'iPhone', '16.1');
    await device.provision(pv);
    const r = await device.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    inbox = textOf(
      kids(kid(r.tree!, 'Changes'), 'Add').find((a) => textOf(a, 'Type') === '2'),
      'ServerId',
    )!;
    const orig = await deliverRaw(
      { deps: stack.deps } as never,
      s.aliceBox,
      [
        'From: Bob <bob@example.test>',
        'To: alice@example.test',
        'Subject: Plans',
        'Date: Mon, 23 Nov 2026 09:00:00 +0000',
        `Message-ID: ${origId}`,
        'References: <root@example.test>',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Line one of the original.',
        'Line two.',
        '',
      ].join('\r\n'),
    );
    original = orig.uid;
  }, 60_000);
  afterAll(async () => stack?.close());

  const worker = () => ({ ...sendDepsOf(stack.deps), control: sendControlHooks() });
  /** bob's Inbox once the scan job has filed what waits. */
  const bobInbox = async () => {
    await drainQueue(worker(), 'compose-test');
    return messagesIn(stack.deps, s.bobBox, 'inbox');
  };
  const subjects = async (box: string, role: string) => (await messagesIn(stack.deps, box, role)).map((m) => m.subject);
  const source = (itemId = original) => [cm('FolderId', inbox), cm('ItemId', itemId)];
  const rawOf = async (blobId: string) => (await loadRaw(stack.deps, blobId)).toString('utf8');

  it('OPTIONS lists SendMail, SmartReply and SmartForward', async () => {
    const r = await fetch(`${stack.protocols}/Microsoft-Server-ActiveSync`, { method: 'OPTIONS' });
    expect(r.headers.get('ms-asprotocolcommands')!.split(',')).toEqual(expect.arrayContaining(['SendMail', 'SmartReply', 'SmartForward']));
  });

  it('SendMail reaches a local mailbox; SaveInSentItems leaves the copy in Sent Items and no draft; Mime as opaque or string', async () => {
    ok(await device.send('SendMail', request('SendMail', mime({ subject: 'Hello Bob' }))));
    ok(await device.send('SendMail', request('SendMail', mime({ subject: 'Hello as text' }), { asText: true })));
    expect(await subjects(s.aliceBox, 'sent')).toEqual(expect.arrayContaining(['Hello Bob', 'Hello as text']));
    expect(await subjects(s.aliceBox, 'drafts')).toEqual([]);
    const got = (await bobInbox()).filter((m) => m.subject.startsWith('Hello'));
    expect(got.map((m) => m.subject).sort()).toEqual(['Hello Bob', 'Hello as text']);
    // A device message without a Message-ID gets one (derived from the ClientId), and From is kept.
    expect(got[0].messageId).toMatch(/^<.+@.+>$/);
    expect(got[0].fromAddress).toBe('alice@example.test');
  });

  it('SmartReply quotes the original below the text and HTML, and threads (In-Reply-To, References)', async () => {
    const body = [
      '--alt',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Sounds good.',
      '--alt',
      'Content-Type: text/html; charset=utf-8',
      '',
      '<html><body><p>Sounds good.</p></body></html>',
      '--alt--',
    ].join('\r\n');
    const raw = mime({ subject: 'Re: Plans', body, type: 'multipart/alternative; boundary=alt' });
    ok(await device.send('SmartReply', request('SmartReply', raw, { source: source() })));
    const [reply] = (await bobInbox()).filter((m) => m.subject === 'Re: Plans');
    expect(reply.inReplyTo).toBe(origId);
    expect(reply.references).toEqual(['<root@example.test>', origId]);
    const parsed = await simpleParser(await loadRaw(stack.deps, reply.blobId));
    expect(parsed.text).toMatch(/^Sounds good\.\n\nOn .+, Bob <bob@example\.test> wrote:\n> Line one of the original\.\n> Line two\./);
    expect(parsed.html).toMatch(
      /<p>Sounds good\.<\/p><p>On .+ wrote:<\/p><blockquote type="cite">[\s\S]*Line one of the original[\s\S]*<\/blockquote><\/body>/,
    );
    expect(await subjects(s.aliceBox, 'sent')).toContain('Re: Plans');
    expect((await stack.call('GET', `/api/mail/messages/${original}`, s.alice)).body).toMatchObject({ answered: true });
  });

  it('SmartForward attaches the original as message/rfc822', async () => {
    ok(await device.send('SmartForward', request('SmartForward', mime({ subject: 'Fwd: Plans', body: 'FYI.' }), { source: source() })));
    const [fwd] = (await bobInbox()).filter((m) => m.subject === 'Fwd: Plans');
    expect(fwd.attachments.map((a) => a.contentType)).toEqual(['message/rfc822']);
    expect(fwd.references).toEqual(['<root@example.test>', origId]);
    expect(fwd.inReplyTo).toBeNull();
    const text = await rawOf(fwd.blobId);
    expect(text).toContain('FYI.');
    expect(text).toContain(`Message-ID: ${origId}`);
    expect(text).toContain('Line one of the original.');
    expect((await stack.call('GET', `/api/mail/messages/${original}`, s.alice)).body).toMatchObject({ forwarded: true });
  });

  it('ReplaceMime sends the device message as it is, threaded when the device did not thread it', async () => {
    const raw = mime({ subject: 'Re: Plans (whole)', body: 'Complete reply, nothing to add.' });
    ok(await device.send('SmartReply', request('SmartReply', raw, { source: source(), replace: true })));
    const [reply] = (await bobInbox()).filter((m) => m.subject === 'Re: Plans (whole)');
    expect(reply.inReplyTo).toBe(origId);
    const text = await rawOf(reply.blobId);
    expect(text).toContain('Complete reply, nothing to add.');
    expect(text).not.toContain('Line one of the original');
    // A signed message cannot be completed without breaking its signature: it goes as it is too.
    const signed = [
      '--sig',
      'Content-Type: text/plain; charset=utf-8',
      '',
      'Signed reply.',
      '--sig',
      'Content-Type: application/pkcs7-signature; name=smime.p7s',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('not really a signature').toString('base64'),
      '--sig--',
    ].join('\r\n');
    const type = 'multipart/signed; protocol="application/pkcs7-signature"; micalg=sha-256; boundary=sig';
    ok(
      await device.send(
        'SmartReply',
        request('SmartReply', mime({ subject: 'Re: Plans (signed)', body: signed, type }), { source: source() }),
      ),
    );
    const [sealed] = (await bobInbox()).filter((m) => m.subject === 'Re: Plans (signed)');
    expect(sealed.inReplyTo).toBe(origId);
    const sealedText = await rawOf(sealed.blobId);
    expect(sealedText).toContain(signed);
    expect(sealedText).not.toContain('Line one of the original');
  });

  it('refusals answer their Status and send nothing: unknown Source (150), forbidden From (130), malformed requests', async () => {
    const sentBefore = (await subjects(s.aliceBox, 'sent')).length;
    const bobBefore = (await bobInbox()).length;
    const bobOwn = await deliverRaw({ deps: stack.deps } as never, s.bobBox, mime({ subject: "Bob's own", to: 'bob@example.test' }));
    const raw = mime({ subject: 'Refused' });
    // An unknown item, and an item of another mailbox: ItemNotFound.
    expect(statusOf(await device.send('SmartReply', request('SmartReply', raw, { source: source('no-such-item') })), 'SmartReply')).toBe(
      150,
    );
    expect(statusOf(await device.send('SmartForward', request('SmartForward', raw, { source: source(bobOwn.uid) })), 'SmartForward')).toBe(
      150,
    );
    // A From alice may not use: AccessDenied, and the draft the send path filed is gone again.
    const forged = mime({ subject: 'Refused', from: 'Bob <bob@example.test>' });
    expect(statusOf(await device.send('SendMail', request('SendMail', forged)), 'SendMail')).toBe(130);
    // Requests not shaped as MS-ASCMD says.
    expect(statusOf(await device.send('SendMail', cm('SendMail', [cm('Mime', Buffer.from(raw))])), 'SendMail')).toBe(103);
    expect(statusOf(await device.send('SendMail', cm('SendMail', [cm('ClientId', 'x1')])), 'SendMail')).toBe(103);
    expect(statusOf(await device.send('SendMail', cm('SendMail', [cm('ClientId', 'x'.repeat(41)), cm('Mime', raw)])), 'SendMail')).toBe(
      103,
    );
    expect(statusOf(await device.send('SmartReply', request('SmartReply', raw)), 'SmartReply')).toBe(103);
    expect(statusOf(await device.send('SendMail', request('SmartReply', raw, { source: source() })), 'SendMail')).toBe(103);
    expect(statusOf(await device.send('SendMail', null), 'SendMail')).toBe(101);
    expect(statusOf(await device.send('SendMail', request('SendMail', 'this is not a message')), 'SendMail')).toBe(107);
    expect(statusOf(await device.send('SendMail', request('SendMail', mime({ subject: 'Refused', to: '' }))), 'SendMail')).toBe(119);
    // Broken WBXML never reaches the command: 400 api-106 from the dispatcher.
    const broken = await device.send('SendMail', null, { raw: Buffer.from([0x03, 0x01, 0x6a, 0x00, 0x00, 0x15, 0x45, 0x52]) });
    expect(broken.status).toBe(400);
    expect(await subjects(s.aliceBox, 'sent')).toHaveLength(sentBefore);
    expect(await subjects(s.aliceBox, 'drafts')).toEqual([]);
    expect((await bobInbox()).filter((m) => m.subject === 'Refused')).toEqual([]);
    expect((await bobInbox()).length).toBe(bobBefore + 1); // bob's own message only
  });

  it('a repeated ClientId is not sent twice (118), in turn or at once; the same Message-ID again neither', async () => {
    const raw = mime({ subject: 'Only once', extra: [`Message-ID: <once-${Date.now()}@example.test>`] });
    ok(await device.send('SendMail', request('SendMail', raw, { clientId: 'dup-1' })));
    expect(statusOf(await device.send('SendMail', request('SendMail', raw, { clientId: 'dup-1' })), 'SendMail')).toBe(118);
    // Another ClientId with the same Message-ID (a copy that did not see the first): found in Sent Items.
    expect(statusOf(await device.send('SendMail', request('SendMail', raw, { clientId: 'dup-2' })), 'SendMail')).toBe(118);
    const racing = mime({ subject: 'Racing' });
    const both = await Promise.all([0, 1].map(() => device.send('SendMail', request('SendMail', racing, { clientId: 'dup-3' }))));
    expect(both.map((x) => (x.tree ? Number(textOf(x.tree, 'Status')) : 'ok')).sort()).toEqual([118, 'ok']);
    const inbox = await bobInbox();
    expect(inbox.filter((m) => m.subject === 'Only once')).toHaveLength(1);
    expect(inbox.filter((m) => m.subject === 'Racing')).toHaveLength(1);
    expect((await subjects(s.aliceBox, 'sent')).filter((x) => x === 'Only once' || x === 'Racing')).toHaveLength(2);
  });

  it("iOS's invitation reply still NEEDS-ACTION is acknowledged and not sent; a real answer goes", async () => {
    const ics = (partstat: string) =>
      [
        '--cal',
        'Content-Type: text/plain; charset=utf-8',
        '',
        'Invitation reply',
        '--cal',
        'Content-Type: text/calendar; method=REPLY; charset=utf-8',
        '',
        'BEGIN:VCALENDAR',
        'METHOD:REPLY',
        'BEGIN:VEVENT',
        'UID:meeting-1@example.test',
        `ATTENDEE;CN=Alice;PARTSTAT=${partstat}:mailto:alice@example.test`,
        'END:VEVENT',
        'END:VCALENDAR',
        '--cal--',
      ].join('\r\n');
    const type = 'multipart/alternative; boundary=cal';
    for (let i = 0; i < 3; i++)
      ok(await device.send('SendMail', request('SendMail', mime({ subject: 'Pending: Meeting', body: ics('NEEDS-ACTION'), type }))));
    ok(await device.send('SendMail', request('SendMail', mime({ subject: 'Accepted: Meeting', body: ics('ACCEPTED'), type }))));
    const inbox = await bobInbox();
    expect(inbox.filter((m) => m.subject === 'Pending: Meeting')).toEqual([]);
    expect(inbox.filter((m) => m.subject === 'Accepted: Meeting')).toHaveLength(1);
    expect(await subjects(s.aliceBox, 'sent')).not.toContain('Pending: Meeting');
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer with no unknown tag', () => {
    expect(device.wire.length).toBeGreaterThan(15);
    expect(crossDecode(device.wire)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
