// Search (the directory as GAL, and the mailbox), ResolveRecipients (with a recipient's S/MIME
// encryption certificate from key lookup) and MeetingResponse (through the web app's invitation
// answer) against the real protocols app on both SQL engines.
import { X509Certificate } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault } from '../../../../lib/keys/client/index.js';
import { OutboundHandoffModel } from '../../../../lib/ingest/index.js';
import { autodiscoverPlugin, easPlugin } from '../../../../lib/plugins/index.js';
import { sqlBackends } from '../../../helpers/databases.js';
import { deliverRaw } from '../../../helpers/messages.js';
import { requirePrograms } from '../../../helpers/peers.js';
import { keyTestValues, TEST_ARGON2 } from '../../keys/helpers.js';
import { seed, startStack, type Stack } from '../_stack.js';
import { as, crossDecode, Device, fh, kid, kids, ns, pv, textOf } from './_client.js';

const backends = await sqlBackends();
const haveDecoders = requirePrograms('wbxml2xml', 'php-horde-activesync');
const se = ns('Search');
const rr = ns('ResolveRecipients');
const mr = ns('MeetingResponse');

const mail = (subject: string, body: string) =>
  `From: carol@example.net\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nDate: ${new Date().toUTCString()}\r\nMessage-ID: <${subject.replace(/\W/g, '')}-${Date.now()}@x>\r\n\r\n${body}\r\n`;

const invitation = (uid: string) =>
  [
    'From: Carol <carol@example.net>',
    'To: alice@example.test',
    'Subject: Invitation: Planning',
    `Date: ${new Date().toUTCString()}`,
    `Message-ID: <invite-${Date.now()}@example.net>`,
    'MIME-Version: 1.0',
    'Content-Type: text/calendar; method=REQUEST; charset=utf-8',
    '',
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'PRODID:-//test//EN',
    'METHOD:REQUEST',
    'BEGIN:VEVENT',
    `UID:${uid}`,
    'DTSTAMP:20261120T100000Z',
    'DTSTART:20261201T100000Z',
    'DTEND:20261201T110000Z',
    'SUMMARY:Planning',
    'ORGANIZER;CN=Carol:mailto:carol@example.net',
    'ATTENDEE;CN=Alice;PARTSTAT=NEEDS-ACTION;RSVP=TRUE:mailto:alice@example.test',
    'END:VEVENT',
    'END:VCALENDAR',
    '',
  ].join('\r\n');

describe.each(backends)('mobile-sync lookups ($name)', (backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let d: Device;
  const folders: Record<string, string> = {};
  beforeAll(async () => {
    stack = await startStack(backend, { plugins: [autodiscoverPlugin, easPlugin], values: await keyTestValues() });
    s = await seed(stack);
    d = new Device(stack.protocols, `Bearer ${s.alice}`, 'LOOKUP1', 'iPhone', '16.1');
    await d.provision(pv);
    const fs = await d.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    for (const a of kids(kid(fs.tree!, 'Changes'), 'Add')) folders[textOf(a, 'DisplayName')!] = textOf(a, 'ServerId')!;
  }, 60_000);
  afterAll(async () => stack?.close());

  it('Search GAL answers the directory, one range at a time with the total', async () => {
    const r = await d.send(
      'Search',
      se('Search', [se('Store', [se('Name', 'GAL'), se('Query', 'bob'), se('Options', [se('Range', '0-9')])])]),
    );
    expect(textOf(r.tree!, 'Status')).toBe('1');
    const store = kid(kid(r.tree!, 'Response'), 'Store')!;
    expect(textOf(store, 'Status')).toBe('1');
    const results = kids(store, 'Result').map((x) => textOf(kid(x, 'Properties'), 'EmailAddress'));
    expect(results).toEqual(['bob@example.test']);
    expect([textOf(store, 'Range'), textOf(store, 'Total')]).toEqual(['0-0', '1']);
    const all = await d.send(
      'Search',
      se('Search', [se('Store', [se('Name', 'GAL'), se('Query', 'example.test'), se('Options', [se('Range', '1-1')])])]),
    );
    const page = kid(kid(all.tree!, 'Response'), 'Store')!;
    expect(kids(page, 'Result')).toHaveLength(1);
    expect(textOf(page, 'Total')).toBe('2');
  });

  it('Search Mailbox finds by words (and folder), with LongIds the device can fetch; bad queries say so', async () => {
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail('zoo trip', 'We saw a zebra near the gate.'));
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, mail('budget', 'Numbers for next year.'));
    const q = (children: ReturnType<typeof se>[]) =>
      d.send(
        'Search',
        se('Search', [se('Store', [se('Name', 'Mailbox'), se('Query', [se('And', children)]), se('Options', [se('Range', '0-4')])])]),
      );
    const r = await q([as('Class', 'Email'), as('CollectionId', folders.Inbox), se('FreeText', 'zebra')]);
    const store = kid(kid(r.tree!, 'Response'), 'Store')!;
    expect(textOf(store, 'Status')).toBe('1');
    const [hit] = kids(store, 'Result');
    expect(textOf(kid(hit, 'Properties'), 'Subject')).toBe('zoo trip');
    const list = (await stack.call('GET', `/api/mail/messages?folderUid=${folders.Inbox}`, s.alice)).body as Array<{
      uid: string;
      subject: string;
    }>;
    expect(textOf(hit, 'LongId')).toBe(list.find((m) => m.subject === 'zoo trip')!.uid);
    expect(kids(kid(kid((await q([se('FreeText', 'nothing-like-this')])).tree!, 'Response'), 'Store')!, 'Result')).toEqual([]);
    expect(textOf(kid(kid((await q([as('CollectionId', 'nope'), se('FreeText', 'zebra')])).tree!, 'Response'), 'Store'), 'Status')).toBe(
      '6',
    );
    expect(textOf(kid(kid((await q([])).tree!, 'Response'), 'Store'), 'Status')).toBe('2');
    // bob's device never finds alice's mail.
    const bob = new Device(stack.protocols, `Bearer ${s.bob}`, 'LOOKUPBOB');
    await bob.provision(pv);
    await bob.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const theirs = await bob.send(
      'Search',
      se('Search', [
        se('Store', [se('Name', 'Mailbox'), se('Query', [se('And', [se('FreeText', 'zebra')])]), se('Options', [se('Range', '0-4')])]),
      ]),
    );
    expect(kids(kid(kid(theirs.tree!, 'Response'), 'Store')!, 'Result')).toEqual([]);
    d.wire.push(...bob.wire);
  });

  it('ResolveRecipients resolves names and addresses, and answers the encryption certificate from key lookup', async () => {
    const ask = (to: string[], retrieval = '2') =>
      d.send(
        'ResolveRecipients',
        rr('ResolveRecipients', [...to.map((t) => rr('To', t)), rr('Options', [rr('CertificateRetrieval', retrieval)])]),
      );
    const none = await ask(['bob@example.test']);
    const resp = kid(none.tree!, 'Response')!;
    expect(textOf(resp, 'Status')).toBe('1');
    expect(textOf(kid(resp, 'Recipient'), 'EmailAddress')).toBe('bob@example.test');
    expect(textOf(kid(kid(resp, 'Recipient'), 'Certificates'), 'Status')).toBe('7'); // no vault yet
    // bob sets up his key vault; his encryption certificate is what the device gets.
    const v = await createVault(s.bobBox, 'bob@example.test', 'pw', { argon2: TEST_ARGON2 });
    expect((await stack.call('POST', `/api/mail/mailboxes/${s.bobBox}/keyvault/enroll`, s.bob, v.body)).status).toBe(201);
    const found = await ask(['bob@example.test', 'nobody-at-all', 'example']);
    const [bobAnswer, nobody, many] = kids(found.tree!, 'Response');
    const der = textOf(kid(kid(bobAnswer, 'Recipient'), 'Certificates'), 'Certificate')!;
    const cert = new X509Certificate(Buffer.from(der, 'base64'));
    expect(cert.subjectAltName ?? cert.subject).toMatch(/bob@example\.test/);
    expect(textOf(nobody, 'Status')).toBe('4');
    expect(textOf(many, 'Status')).toBe('2');
    expect(textOf(many, 'RecipientCount')).toBe('2');
    const noCerts = await ask(['bob@example.test'], '1');
    expect(kid(kid(kid(noCerts.tree!, 'Response'), 'Recipient'), 'Certificates')).toBeUndefined();
  });

  it('MeetingResponse accepts an invitation named by its message: the event is accepted and a REPLY goes to the organizer', async () => {
    await deliverRaw({ deps: stack.deps } as never, s.aliceBox, invitation('plan-123@example.net'));
    const ev = (
      await stack.call('POST', '/api/mail/calendar-events', s.alice, {
        mailboxUid: s.aliceBox,
        icalUid: 'plan-123@example.net',
        summary: 'Planning',
        start: '2026-12-01T10:00:00Z',
        end: '2026-12-01T11:00:00Z',
        organizer: { email: 'carol@example.net', name: 'Carol' },
        attendees: [{ email: 'alice@example.test', partstat: 'needs-action' }],
      })
    ).body as { uid: string };
    const list = (await stack.call('GET', `/api/mail/messages?folderUid=${folders.Inbox}`, s.alice)).body as Array<{
      uid: string;
      subject: string;
    }>;
    const msg = list.find((m) => m.subject === 'Invitation: Planning')!;
    const r = await d.send(
      'MeetingResponse',
      mr('MeetingResponse', [mr('Request', [mr('UserResponse', '1'), mr('CollectionId', folders.Inbox), mr('RequestId', msg.uid)])]),
    );
    const result = kid(r.tree!, 'Result')!;
    expect([textOf(result, 'Status'), textOf(result, 'CalendarId')]).toEqual(['1', ev.uid]);
    const after = (await stack.call('GET', `/api/mail/calendar-events/${ev.uid}`, s.alice)).body as {
      attendees: Array<{ partstat: string }>;
    };
    expect(after.attendees[0].partstat).toBe('accepted');
    const replies = await stack.deps.store.repo<{ envelopeTo: string[] }>(OutboundHandoffModel).list({ limit: 10 });
    expect(replies.some((h) => h.envelopeTo.includes('carol@example.net'))).toBe(true);
    const bad = await d.send(
      'MeetingResponse',
      mr('MeetingResponse', [mr('Request', [mr('UserResponse', '9'), mr('RequestId', msg.uid)])]),
    );
    expect(textOf(kid(bad.tree!, 'Result'), 'Status')).toBe('2');
    const unknown = await d.send(
      'MeetingResponse',
      mr('MeetingResponse', [mr('Request', [mr('UserResponse', '3'), mr('RequestId', 'no-such')])]),
    );
    expect(textOf(kid(unknown.tree!, 'Result'), 'Status')).toBe('2');
  });

  it.runIf(haveDecoders)('libwbxml and Horde decode every request and answer with no unknown tag', () => {
    expect(crossDecode(d.wire)).toEqual({ libwbxml: [], horde: [], schema: [] });
  });
});
