// Read receipts (Spec: Properties that hold for records in general — receipt settings for internal,
// federated and external senders; Inbound message, delivery rule 2): requested receipts are sent or
// not per the mailbox's receipt settings, and receipts for our own messages are consumed on arrival.
// Real hand-off over HTTP, the scan and send jobs, a sendmail-compatible recorder, a
// real DNS server on loopback for the _svc record that makes a sender federated, mailauth for DKIM.
import { createSocket, type Socket } from 'node:dgram';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import dnsPacket from 'dns-packet';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, OutboundHandoffModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { drainSends } from '../../../lib/jobs/send.js';
import { loadRaw, MessageModel, ReadReceiptModel, type Message, type ReadReceipt } from '../../../lib/mail/index.js';
import { generateDkimKey } from '../../../lib/pki/index.js';
import { OutboundJobModel, relayJobUid, sendControlHooks, sendDepsOf, type OutboundJob, type SendDeps } from '../../../lib/send/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';
import { draft, folderByRole, messagesIn, recorder, type Recorder } from './helpers.js';

const backends = await sqlBackends();
const verified = (domain: string) => ({ 'Authentication-Results': `mx.example.test; dkim=pass header.d=${domain}` });

let dns: Socket;
function startDns(records: Record<string, string>): Promise<number> {
  dns = createSocket('udp4');
  dns.on('message', (msg, rinfo) => {
    const q = dnsPacket.decode(msg);
    const question = q.questions?.[0];
    const value = question && question.type === 'TXT' ? records[question.name.toLowerCase()] : undefined;
    dns.send(
      dnsPacket.encode({
        type: 'response',
        id: q.id,
        flags: dnsPacket.AUTHORITATIVE_ANSWER | (value ? 0 : 3),
        questions: q.questions,
        answers: value ? [{ type: 'TXT', name: question!.name, ttl: 60, class: 'IN', data: [value] }] : [],
      }),
      rinfo.port,
      rinfo.address,
    );
  });
  return new Promise((r) => dns.bind(0, '127.0.0.1', () => r((dns.address() as AddressInfo).port)));
}

describe.each(backends)('read receipts ($name)', (backend) => {
  let f: IngestFixture;
  let rec: Recorder;
  let worker: WorkerDeps & SendDeps;
  let dkimDir: string;
  let txt: string;
  const store = () => f.api.deps.store;
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mail._domainkey.example.test') return [[txt]];
    throw Object.assign(new Error('no such record'), { code: 'ENOTFOUND' });
  };
  const receiptHandoffs = () =>
    store()
      .repo<{ uid: string; envelopeTo: string[]; rawRef: string }>(OutboundHandoffModel)
      .list({ filter: { kind: 'receipt' } });
  const settings = async (token: string, mailboxUid: string, receiptSettings: Record<string, string>) => {
    const box = await f.api.call('GET', `/api/mail/mailboxes/${mailboxUid}`, { token });
    const r = await f.api.call('PUT', `/api/mail/mailboxes/${mailboxUid}`, { token, body: { version: box.body.version, receiptSettings } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  const markSeen = async (token: string, uid: string, seen = true) => {
    const m = (await store().repo<Message>(MessageModel).get(uid))!;
    const r = await f.api.call('PUT', `/api/mail/messages/${uid}`, { token, body: { version: m.version, seen } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
  };
  /** An inbound message for alice (verified or not), filed by the scan job; answers her copy. */
  const inbound = async (from: string, subject: string, headers: Record<string, string>) => {
    const r = await f.deliver({
      from,
      to: ['alice@example.test'],
      raw: message({ from, subject, headers: { 'Disposition-Notification-To': from, ...headers } }),
    });
    expect(r.status).toBe(202);
    await drainQueue(worker, 'mdn-worker');
    const [e] = await store()
      .repo<IngestEntry>(IngestEntryModel)
      .list({ filter: { transactionId: r.body.transactionId } });
    return (await store().repo<Message>(MessageModel).get(e.messageUid!))!;
  };

  beforeAll(async () => {
    rec = recorder();
    const key = await generateDkimKey();
    txt = key.dnsTxt;
    dkimDir = mkdtempSync(join(tmpdir(), 'svcmail-mdn-dkim-'));
    writeFileSync(join(dkimDir, 'example.test.mail.key'), key.privateKeyPem, { mode: 0o600 });
    const port = await startDns({ '_svc.fed.example': 'v=SVCv1; id=fed1; host=mail.fed.example' });
    f = await ingestFixture(backend, {
      'mail:security:trusted_authserv_id': 'mx.example.test',
      'mail:dkim:dir': dkimDir,
      'mail:dns:nameservers': [`127.0.0.1:${port}`],
      'mail:dns:timeout_ms': 1000,
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
      'mail:send:retry_backoff_seconds': 0,
      'mail:send:rate_limit:max': 1000,
    });
    worker = { ...sendDepsOf(f.api.deps), control: sendControlHooks() };
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    dns?.close();
    rmSync(dkimDir, { recursive: true, force: true });
  });

  it('internal, settings always: reading sends one DKIM-signed RFC 8098 receipt, consumed at the sender and recorded on the Sent Items copy', async () => {
    await settings(f.users.alice, f.users.aliceBox.uid, { internal: 'always', federated: 'never', external: 'never' });
    const d = await draft(f.api, f.users.bobBox.uid, {
      from: 'Bob <bob@example.test>',
      to: ['alice@example.test'],
      subject: 'please confirm',
      extra: ['Disposition-Notification-To: bob@example.test'],
      messageId: `<confirm-${backend.name}@example.test>`,
    });
    expect((await f.api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: f.users.bob, body: {} })).status).toBe(200);
    await drainQueue(worker, 'mdn-worker');
    const copy = (await messagesIn(f.api.deps, f.users.aliceBox.uid, 'inbox')).find((m) => m.subject === 'please confirm')!;
    expect(copy.receiptTo).toBe('bob@example.test');
    // nothing is owed before it is read
    await drainSends(worker, 'mdn-worker');
    expect(await receiptHandoffs()).toHaveLength(0);
    await markSeen(f.users.alice, copy.uid);
    await drainSends(worker, 'mdn-worker');
    const [handoff, ...more] = await receiptHandoffs();
    expect(more).toHaveLength(0);
    expect(handoff.envelopeTo).toEqual(['bob@example.test']);
    const job = (await store().repo<OutboundJob>(OutboundJobModel).get(relayJobUid(handoff.uid)))!;
    expect(job).toMatchObject({ localRcpts: ['bob@example.test'], pending: [], state: 'sent' });
    const signed = await loadRaw(f.api.deps, job.rawRef);
    const text = signed.toString();
    expect(text).toMatch(/Content-Type: multipart\/report; report-type=disposition-notification/i);
    expect(text).toMatch(/Content-Type: message\/disposition-notification/i);
    expect(text).toContain(`Original-Message-ID: <confirm-${backend.name}@example.test>`);
    expect(text).toContain('Disposition: automatic-action/MDN-sent-automatically; displayed');
    expect(text).toMatch(/^In-Reply-To: <confirm-/m);
    const v = await dkimVerify(signed, { resolver });
    expect(v.results[0].status.result).toBe('pass');
    // bob's side: the receipt is consumed (not filed) and recorded on his Sent Items copy
    await drainQueue(worker, 'mdn-worker');
    expect((await messagesIn(f.api.deps, f.users.bobBox.uid, 'inbox')).filter((m) => m.subject.startsWith('Read:'))).toHaveLength(0);
    const sent = (await store().repo<Message>(MessageModel).get(d.uid))!;
    expect(sent.folderUid).toBe((await folderByRole(f.api.deps, f.users.bobBox.uid, 'sent')).uid);
    expect(sent.receipts).toEqual([
      {
        from: 'alice@example.test',
        disposition: 'automatic-action/MDN-sent-automatically; displayed',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
    // read again (unread, then read): at most one receipt per message
    await markSeen(f.users.alice, copy.uid, false);
    await markSeen(f.users.alice, copy.uid);
    await drainSends(worker, 'mdn-worker');
    expect(await receiptHandoffs()).toHaveLength(1);
    expect(await store().repo(ReadReceiptModel).count({ mailboxUid: f.users.aliceBox.uid })).toBe(1);
  });

  it('federated and external senders follow their own settings; the transport gets the receipt', async () => {
    await settings(f.users.alice, f.users.aliceBox.uid, { internal: 'never', federated: 'always', external: 'never' });
    const before = rec.runs().length;
    const fed = await inbound('dana@fed.example', 'from a federated server', verified('fed.example'));
    const ext = await inbound('erin@plain.example', 'from outside', verified('plain.example'));
    expect([fed.receiptTo, ext.receiptTo]).toEqual(['dana@fed.example', 'erin@plain.example']);
    await markSeen(f.users.alice, fed.uid);
    await markSeen(f.users.alice, ext.uid);
    await drainSends(worker, 'mdn-worker');
    const runs = rec.runs().slice(before);
    expect(runs.map((r) => r.args.slice(4))).toEqual([['dana@fed.example']]);
    expect(runs[0].eml).toMatch(/report-type=disposition-notification/i);
    const states = await store()
      .repo<ReadReceipt>(ReadReceiptModel)
      .list({ filter: { messageUid: { $in: [fed.uid, ext.uid] } } });
    expect(Object.fromEntries(states.map((s) => [s.to, s.state]))).toEqual({
      'dana@fed.example': 'sent',
      'erin@plain.example': 'declined',
    });
    // now external: always — a new external message is answered
    await settings(f.users.alice, f.users.aliceBox.uid, { internal: 'never', federated: 'never', external: 'always' });
    const ext2 = await inbound('erin@plain.example', 'from outside again', verified('plain.example'));
    await markSeen(f.users.alice, ext2.uid);
    await drainSends(worker, 'mdn-worker');
    expect(
      rec
        .runs()
        .slice(before)
        .map((r) => r.args.slice(4)),
    ).toEqual([['dana@fed.example'], ['erin@plain.example']]);
  });

  it('no receipt for an unverified sender, or one asking for it outside its From domain', async () => {
    await settings(f.users.alice, f.users.aliceBox.uid, { internal: 'always', federated: 'always', external: 'always' });
    const unverified = await inbound('mallory@plain.example', 'unverified', {});
    const elsewhere = await f.deliver({
      from: 'erin@plain.example',
      to: ['alice@example.test'],
      raw: message({
        from: 'erin@plain.example',
        subject: 'elsewhere',
        headers: { 'Disposition-Notification-To': 'tracker@spy.example', ...verified('plain.example') },
      }),
    });
    await drainQueue(worker, 'mdn-worker');
    const other = (await messagesIn(f.api.deps, f.users.aliceBox.uid, 'inbox')).find((m) => m.subject === 'elsewhere')!;
    expect(elsewhere.status).toBe(202);
    expect([unverified.receiptTo, other.receiptTo]).toEqual([null, null]);
    const before = (await receiptHandoffs()).length;
    await markSeen(f.users.alice, unverified.uid);
    await markSeen(f.users.alice, other.uid);
    await drainSends(worker, 'mdn-worker');
    expect(await receiptHandoffs()).toHaveLength(before);
    const r = await f.api.call('POST', `/api/mail/messages/${unverified.uid}/receipt`, { token: f.users.alice, body: {} });
    expect(r.status).toBe(409);
  });

  it('settings ask: nothing until the owner answers; POST /receipt sends a manual-action receipt; another user gets 404', async () => {
    await settings(f.users.alice, f.users.aliceBox.uid, { internal: 'ask', federated: 'ask', external: 'ask' });
    const m = await inbound('erin@plain.example', 'ask me', verified('plain.example'));
    const early = await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.alice, body: {} });
    expect(early.status).toBe(409); // not read yet
    // the reader's body says where the receipt stands: owed once read, then ask (the web app offers the choice)
    const stands = async () => (await f.api.call('GET', `/api/mail/messages/${m.uid}/body`, { token: f.users.alice })).body.receipt;
    expect(await stands()).toBe('not-read');
    await markSeen(f.users.alice, m.uid);
    await drainSends(worker, 'mdn-worker');
    const receipts = store().repo<ReadReceipt>(ReadReceiptModel);
    expect((await receipts.findOne({ messageUid: m.uid }))!.state).toBe('ask');
    expect(await stands()).toBe('ask');
    const before = rec.runs().length;
    expect((await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.bob, body: {} })).status).toBe(404);
    expect((await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.admin, body: {} })).status).toBe(404);
    expect((await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.alice, body: { send: 'yes' } })).status).toBe(
      400,
    );
    const ok = await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.alice, body: { send: true } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    expect(ok.body).toMatchObject({ state: 'approved', to: 'erin@plain.example' });
    await drainSends(worker, 'mdn-worker');
    const runs = rec.runs().slice(before);
    expect(runs).toHaveLength(1);
    expect(runs[0].eml).toContain('Disposition: manual-action/MDN-sent-manually; displayed');
    expect(await receipts.findOne({ messageUid: m.uid })).toMatchObject({ state: 'sent', mode: 'manual' });
    expect(await stands()).toBe('sent');
    expect((await f.api.call('POST', `/api/mail/messages/${m.uid}/receipt`, { token: f.users.alice, body: {} })).status).toBe(409);
    // declining another
    const n = await inbound('erin@plain.example', 'ask me not', verified('plain.example'));
    await markSeen(f.users.alice, n.uid);
    expect(
      (await f.api.call('POST', `/api/mail/messages/${n.uid}/receipt`, { token: f.users.alice, body: { send: false } })).body.state,
    ).toBe('declined');
    await drainSends(worker, 'mdn-worker');
    expect(rec.runs().length).toBe(before + 1);
  });

  it('a receipt from outside for a message we sent is consumed and recorded, never filed', async () => {
    const d = await draft(f.api, f.users.aliceBox.uid, {
      from: 'alice@example.test',
      to: ['carol@remote.example'],
      subject: 'to carol',
      messageId: `<to-carol-${backend.name}@example.test>`,
    });
    expect((await f.api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: f.users.alice, body: {} })).status).toBe(200);
    const mdn = [
      'From: carol@remote.example',
      'To: alice@example.test',
      'Subject: Read: to carol',
      `Message-ID: <mdn-${Date.now()}@remote.example>`,
      `In-Reply-To: <to-carol-${backend.name}@example.test>`,
      'MIME-Version: 1.0',
      'Content-Type: multipart/report; report-type=disposition-notification; boundary="b1"',
      'Authentication-Results: mx.example.test; dkim=pass header.d=remote.example',
      '',
      '--b1',
      'Content-Type: text/plain',
      '',
      'Displayed.',
      '--b1',
      'Content-Type: message/disposition-notification',
      '',
      'Reporting-UA: remote.example; other',
      'Final-Recipient: rfc822; carol@remote.example',
      `Original-Message-ID: <to-carol-${backend.name}@example.test>`,
      'Disposition: manual-action/MDN-sent-manually; displayed',
      '',
      '--b1--',
      '',
    ].join('\r\n');
    const inboxBefore = (await messagesIn(f.api.deps, f.users.aliceBox.uid, 'inbox')).length;
    const r = await f.deliver({ from: 'carol@remote.example', to: ['alice@example.test'], raw: mdn });
    await drainQueue(worker, 'mdn-worker');
    const [e] = await store()
      .repo<IngestEntry>(IngestEntryModel)
      .list({ filter: { transactionId: r.body.transactionId } });
    expect(e.state).toBe('consumed');
    expect((await messagesIn(f.api.deps, f.users.aliceBox.uid, 'inbox')).length).toBe(inboxBefore);
    expect((await store().repo<Message>(MessageModel).get(d.uid))!.receipts).toEqual([
      {
        from: 'carol@remote.example',
        disposition: 'manual-action/MDN-sent-manually; displayed',
        at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      },
    ]);
  });
});
