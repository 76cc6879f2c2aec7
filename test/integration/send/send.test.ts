// POST /api/mail/messages/:id/send and the Outbox job, against a sendmail-compatible recorder (real
// process, exit codes) and the real inbound path for local recipients; both SQL backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AclEntryModel } from '../../../lib/acl/index.js';
import { ControlMessageModel, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { drainSends, runSendRound } from '../../../lib/jobs/send.js';
import { loadRaw, MessageModel, type Message } from '../../../lib/mail/index.js';
import { jobUidOf, OutboundJobModel, sendControlHooks, sendDepsOf, type OutboundJob, type SendDeps } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { draft, folderByRole, messagesIn, recorder, type Recorder } from './helpers.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('send on %s', (_name, backend) => {
  let api: TestApi;
  let rec: Recorder;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  let worker: WorkerDeps & SendDeps;
  const mail: Array<[string, Record<string, unknown>]> = [];
  const pushed: Array<[string, string, Record<string, unknown>]> = [];
  beforeAll(async () => {
    rec = recorder();
    api = await startTestApi(backend, {
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
      'mail:security:trusted_authserv_id': 'mx.example.test',
      'mail:send:retry_backoff_seconds': 0,
      'mail:send:max_attempts': 2,
      'mail:send:rate_limit:max': 1000,
    });
    users = await seedUsers(api);
    worker = { ...sendDepsOf(api.deps), control: sendControlHooks() };
    for (const kind of ['message.sent', 'send.failed'] as const)
      api.deps.events.onMail(kind, (_k, p) => {
        mail.push([kind, p]);
      });
    api.deps.events.subscribe(users.aliceBox.uid, (ch, ev) => {
      pushed.push([ch, ev.type, ev.data]);
    });
  }, 60_000);
  afterAll(async () => api?.close());

  const job = (messageUid: string) => api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(messageUid));
  const send = (uid: string, body?: unknown, token = users.alice) =>
    api.call('POST', `/api/mail/messages/${uid}/send`, { token, body: body ?? {} });

  it('403 api-102 for a foreign From or Sender; the draft stays in Drafts and nothing is queued', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'bob@example.test', to: ['x@example.net'] });
    const r = await send(d.uid);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('api-102');
    const s = await draft(api, users.aliceBox.uid, {
      from: 'alice@example.test',
      to: ['x@example.net'],
      extra: ['Sender: bob@example.test'],
    });
    expect((await send(s.uid)).status).toBe(403);
    expect(await job(d.uid)).toBeNull();
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'drafts')).uid,
    );
    expect(rec.runs().length).toBe(0);
    // an admin's trusted role does not help; bob cannot even see alice's draft
    expect((await send(d.uid, {}, users.bob)).status).toBe(404);
  });

  it('sendAs on a shared mailbox permits its address as From', async () => {
    await api.deps.store.repo<Record<string, unknown>>(AclEntryModel).create({
      resource: 'mailboxes',
      resourceUid: users.bobBox.uid,
      subject: 'user:alice',
      rights: ['sendAs'],
      mailboxUid: users.bobBox.uid,
    });
    const d = await draft(api, users.aliceBox.uid, { from: 'bob@example.test', to: ['shared@example.net'] });
    const r = await send(d.uid);
    expect(r.status).toBe(200);
    expect(r.body.accepted).toEqual(['shared@example.net']);
    expect(rec.runs().at(-1)!.args).toEqual(['-i', '-f', 'bob@example.test', '--', 'shared@example.net']);
    await api.deps.store.repo(AclEntryModel).deleteMany({ resourceUid: users.bobBox.uid, subject: 'user:alice' });
  });

  it('synchronous send: external via the transport once (Bcc removed), local through the inbound path; Sent Items, message.sent, send-succeeded', async () => {
    const before = rec.runs().length;
    const d = await draft(api, users.aliceBox.uid, {
      from: 'Alice <alice@example.test>',
      to: ['carol@example.net', 'bob@example.test'],
      extra: ['Bcc: dave@example.net'],
      subject: 'quarterly',
    });
    const r = await send(d.uid);
    expect(r.status).toBe(200);
    expect(r.body.state).toBe('sent');
    expect(r.body.accepted.sort()).toEqual(['bob@example.test', 'carol@example.net', 'dave@example.net']);
    const runs = rec.runs().slice(before);
    expect(runs).toHaveLength(1);
    expect(runs[0].args.slice(4).sort()).toEqual(['carol@example.net', 'dave@example.net']);
    expect(runs[0].eml).not.toMatch(/^Bcc:/im);
    const sent = await api.deps.store.repo<Message>(MessageModel).get(d.uid);
    expect(sent!.folderUid).toBe((await folderByRole(api.deps, users.aliceBox.uid, 'sent')).uid);
    expect(sent!.draft).toBe(false);
    expect(mail.some(([k, p]) => k === 'message.sent' && p.messageUid === d.uid)).toBe(true);
    expect(pushed.some(([, t, p]) => t === 'send-succeeded' && p.messageUid === d.uid)).toBe(true);
    // bob's copy is an ingest entry; the scan job files it in his Inbox
    await drainQueue(worker, 'test-worker');
    const inbox = await messagesIn(api.deps, users.bobBox.uid, 'inbox');
    expect(inbox.filter((m) => m.subject === 'quarterly')).toHaveLength(1);
    // a second send of the same message is refused (no longer a draft)
    expect((await send(d.uid)).status).toBe(409);
    expect(rec.runs().length).toBe(before + 1);
  });

  it('502 api-115 with reasons when no recipient is accepted; the draft stays in Drafts', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['refuse-1@example.net', 'nobody@example.test'] });
    const r = await send(d.uid);
    expect(r.status).toBe(502);
    expect(r.body.code).toBe('api-115');
    expect(r.body.details.map((x: { path: string }) => x.path).sort()).toEqual(['nobody@example.test', 'refuse-1@example.net']);
    expect(r.body.details.find((x: { path: string }) => x.path === 'refuse-1@example.net').message).toMatch(/EX_NOUSER/);
    expect((await job(d.uid))!.state).toBe('failed');
    const m = await api.deps.store.repo<Message>(MessageModel).get(d.uid);
    expect(m!.draft).toBe(true);
    expect(m!.folderUid).toBe((await folderByRole(api.deps, users.aliceBox.uid, 'drafts')).uid);
  });

  it("partial failure: 200, send.failed for the refused recipient and a multipart/report DSN in the sender's Inbox", async () => {
    const d = await draft(api, users.aliceBox.uid, {
      from: 'alice@example.test',
      to: ['ok@example.net', 'refuse-2@example.net'],
      subject: 'partial',
    });
    const r = await send(d.uid);
    expect(r.status).toBe(200);
    expect(r.body.accepted).toEqual(['ok@example.net']);
    expect(mail.filter(([k, p]) => k === 'send.failed' && p.messageUid === d.uid).map(([, p]) => p.rcpt)).toEqual(['refuse-2@example.net']);
    const dsn = (await messagesIn(api.deps, users.aliceBox.uid, 'inbox')).find((m) => m.subject.includes('partial'));
    expect(dsn).toBeTruthy();
    const raw = (await loadRaw(api.deps, dsn!.blobId)).toString();
    expect(raw).toMatch(/multipart\/report; report-type=delivery-status/i);
    expect(raw).toContain('Final-Recipient: rfc822; refuse-2@example.net');
  });

  it('background: 202 into the Outbox; the job sends it to Sent Items with send-succeeded; temporary failure retries then fails with a DSN', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['later@example.net'] });
    const r = await send(d.uid, { background: true });
    expect(r.status).toBe(202);
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'outbox')).uid,
    );
    await drainSends(worker, 'w1');
    expect((await job(d.uid))!.state).toBe('sent');
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'sent')).uid,
    );

    const t = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['tempfail@example.net'], subject: 'tempy' });
    expect((await send(t.uid, { background: true })).status).toBe(202);
    const r1 = await runSendRound(worker, 'w1');
    expect(r1.retrying).toBe(1);
    let j = (await job(t.uid))!;
    expect(j.state).toBe('queued');
    expect(j.pending).toEqual(['tempfail@example.net']);
    expect(pushed.some(([, ty, p]) => ty === 'send-retrying' && p.messageUid === t.uid)).toBe(true);
    expect((await api.deps.store.repo<Message>(MessageModel).get(t.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'outbox')).uid,
    );
    await runSendRound(worker, 'w1'); // attempt 2 = max_attempts: failed for good
    j = (await job(t.uid))!;
    expect(j.state).toBe('failed');
    expect(pushed.some(([, ty, p]) => ty === 'send-failed' && p.messageUid === t.uid)).toBe(true);
    expect((await api.deps.store.repo<Message>(MessageModel).get(t.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'outbox')).uid,
    );
    expect((await messagesIn(api.deps, users.aliceBox.uid, 'inbox')).some((m) => m.subject.includes('tempy'))).toBe(true);
  });

  it('scheduled send waits for its time', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['sched@example.net'] });
    expect((await send(d.uid, { sendAt: new Date(Date.now() + 3_600_000).toISOString() })).status).toBe(202);
    await drainSends(worker, 'w1');
    expect((await job(d.uid))!.state).toBe('queued');
    await api.deps.store.repo<OutboundJob>(OutboundJobModel).update(jobUidOf(d.uid), { nextAttemptAt: new Date(Date.now() - 1000) });
    await drainSends(worker, 'w1');
    expect((await job(d.uid))!.state).toBe('sent');
  });

  it('recall withdraws the unread internal copy through the inbound rules and reports to the sender', async () => {
    const d = await draft(api, users.aliceBox.uid, {
      from: 'alice@example.test',
      to: ['bob@example.test'],
      subject: 'oops',
      messageId: `<oops-${backend.name}@example.test>`,
    });
    expect((await send(d.uid)).status).toBe(200);
    await drainQueue(worker, 'w1');
    expect((await messagesIn(api.deps, users.bobBox.uid, 'inbox')).filter((m) => m.subject === 'oops')).toHaveLength(1);
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/recall`, { token: users.alice });
    expect(r.status).toBe(200);
    expect(r.body.recalled).toEqual(['bob@example.test']);
    await drainQueue(worker, 'w1');
    expect(
      (await messagesIn(api.deps, users.bobBox.uid, 'inbox')).filter((m) => m.subject === 'oops' || m.subject.startsWith('Recall')),
    ).toHaveLength(0);
    expect(await api.deps.store.repo(ControlMessageModel).count({ kind: 'recall', mailboxUid: users.bobBox.uid })).toBe(1);
    expect((await messagesIn(api.deps, users.aliceBox.uid, 'inbox')).some((m) => m.subject.includes('Recall succeeded'))).toBe(true);
  });

  it('development without a sendmail binary: local recipients delivered directly, external refused', async () => {
    const dev = await startTestApi(backend, { 'mail:transport:sendmail:path': '/nonexistent/sendmail' });
    try {
      const u = await seedUsers(dev);
      const d = await draft(dev, u.aliceBox.uid, {
        from: 'alice@example.test',
        to: ['bob@example.test', 'far@example.net'],
        subject: 'dev mode',
      });
      const r = await dev.call('POST', `/api/mail/messages/${d.uid}/send`, { token: u.alice, body: {} });
      expect(r.status).toBe(200);
      expect(r.body.accepted).toEqual(['bob@example.test']);
      expect(r.body.refused).toEqual([
        expect.objectContaining({ rcpt: 'far@example.net', permanent: true, reason: expect.stringMatching(/development/) }),
      ]);
      await drainQueue({ ...sendDepsOf(dev.deps), control: sendControlHooks() }, 'dev-worker');
      expect((await messagesIn(dev.deps, u.bobBox.uid, 'inbox')).filter((m) => m.subject === 'dev mode')).toHaveLength(1);
    } finally {
      await dev.close();
    }
  });

  it('the send route is limited per user (429 api-109)', async () => {
    const limited = await startTestApi(backend, { 'mail:send:rate_limit:max': 2, 'mail:transport:sendmail:path': rec.bin });
    try {
      const u = await seedUsers(limited);
      const codes = [];
      for (let i = 0; i < 3; i++)
        codes.push((await limited.call('POST', '/api/mail/messages/none/send', { token: u.alice, body: {} })).status);
      expect(codes).toEqual([404, 404, 429]);
      expect((await limited.call('POST', '/api/mail/messages/none/send', { token: u.bob, body: {} })).status).toBe(404);
    } finally {
      await limited.close();
    }
  });
});
