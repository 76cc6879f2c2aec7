// Scheduled send (Spec: Outbound message, row 3 — "draft, scheduled for later, time reached →
// handled like Outbox, same job as background send"): the time is a field of the draft, set through
// compose; the draft stays a draft in Drafts until then. And the send job's shutdown wait (Spec:
// Limits — "drain_ms is the shutdown wait"). Real HTTP, both SQL backends, a sendmail-compatible recorder.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainSends, startSendLoop } from '../../../lib/jobs/send.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { jobUidOf, OutboundJobModel, sendControlHooks, sendDepsOf, type OutboundJob } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { draft, folderByRole, recorder, type Recorder } from './helpers.js';

const backends = await sqlBackends();
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe.each(backends.map((b) => [b.name, b] as const))('scheduled send on %s', (_name, backend) => {
  let api: TestApi;
  let rec: Recorder;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    rec = recorder();
    api = await startTestApi(backend, {
      'mail:transport:sendmail:path': rec.bin,
      'mail:transport:sendmail:log_path': rec.log,
      'mail:send:retry_backoff_seconds': 0,
      'mail:jobs:wake_address': '',
      'mail:send:rate_limit:max': 1000,
    });
    users = await seedUsers(api);
  }, 60_000);
  afterAll(async () => api?.close());
  const worker = () => ({ ...sendDepsOf(api.deps), control: sendControlHooks() });
  const message = async (uid: string) => (await api.deps.store.repo<Message>(MessageModel).get(uid))!;
  const folder = async (role: string) => (await folderByRole(api.deps, users.aliceBox.uid, role)).uid;
  const handedOver = (subject: string) => rec.runs().filter((r) => r.eml.includes(`Subject: ${subject}`)).length;
  const compose = async (body: Record<string, unknown>) => {
    const r = await api.call('POST', '/api/mail/compose', {
      token: users.alice,
      body: { mailboxUid: users.aliceBox.uid, to: ['sched@example.net'], text: 'later', ...body },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { uid: string; version: number; sendAt: string | null };
  };

  it("a draft's sendAt (compose) keeps it a draft in Drafts until the time; then the job sends it like the Outbox", async () => {
    const at = new Date(Date.now() + 2500);
    const d = await compose({ subject: 'scheduled one', sendAt: at.toISOString() });
    expect(new Date(d.sendAt!).getTime()).toBe(at.getTime());
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(r.body).toMatchObject({ state: 'scheduled', sendAt: at.toISOString() });
    await drainSends(worker(), 'w1');
    expect(await message(d.uid)).toMatchObject({ draft: true, folderUid: await folder('drafts') });
    expect((await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(d.uid)))!).toMatchObject({
      state: 'queued',
      attempts: 0,
      nextAttemptAt: at,
    });
    expect(handedOver('scheduled one')).toBe(0);
    await sleep(at.getTime() - Date.now() + 100);
    await drainSends(worker(), 'w1');
    expect(handedOver('scheduled one')).toBe(1);
    expect(await message(d.uid)).toMatchObject({ draft: false, folderUid: await folder('sent') });
    expect((await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(d.uid)))!.state).toBe('sent');
  });

  it('sendAt in the send request (older clients) is written to the draft and schedules it the same way', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['sched@example.net'], subject: 'scheduled two' });
    const at = new Date(Date.now() + 3_600_000);
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { sendAt: at.toISOString() } });
    expect(r.status).toBe(202);
    expect(await message(d.uid)).toMatchObject({ draft: true, folderUid: await folder('drafts'), sendAt: at });
    await drainSends(worker(), 'w1');
    expect(handedOver('scheduled two')).toBe(0);
    // sent again while scheduled: refused (it is already on its way)
    expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} })).status).toBe(409);
  });

  it('replacing the scheduled draft (compose) cancels that send; the new draft keeps its sendAt', async () => {
    const at = new Date(Date.now() + 1500);
    const d = await compose({ subject: 'scheduled three', sendAt: at.toISOString() });
    expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} })).status).toBe(202);
    const put = await api.call('PUT', `/api/mail/compose/${d.uid}`, {
      token: users.alice,
      body: {
        mailboxUid: users.aliceBox.uid,
        to: ['sched@example.net'],
        subject: 'scheduled three, edited',
        text: 'edited',
        version: d.version,
      },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(new Date(put.body.sendAt).getTime()).toBe(at.getTime());
    await sleep(at.getTime() - Date.now() + 100);
    await drainSends(worker(), 'w1');
    const j = (await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(d.uid)))!;
    expect(j.state).toBe('failed');
    expect(j.lastError).toMatch(/deleted or replaced/);
    expect(handedOver('scheduled three')).toBe(0);
    expect(await message(put.body.uid)).toMatchObject({ draft: true, folderUid: await folder('drafts') });
  });

  it('a sendAt already past sends in the background at once; compose refuses a malformed sendAt', async () => {
    const d = await compose({ subject: 'scheduled four', sendAt: new Date(Date.now() - 60_000).toISOString() });
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} });
    expect(r.status).toBe(202);
    expect(r.body.state).toBe('queued');
    expect((await message(d.uid)).folderUid).toBe(await folder('outbox'));
    await drainSends(worker(), 'w1');
    expect(handedOver('scheduled four')).toBe(1);
    const bad = await api.call('POST', '/api/mail/compose', {
      token: users.alice,
      body: { mailboxUid: users.aliceBox.uid, to: ['x@example.net'], sendAt: 'tomorrow-ish' },
    });
    expect(bad.status).toBe(400);
  });
});

describe.each(backends.map((b) => [b.name, b] as const))('send job shutdown waits drain_ms on %s', (_name, backend) => {
  let rec: Recorder;
  const apis: TestApi[] = [];
  beforeAll(() => {
    rec = recorder();
  });
  afterAll(async () => {
    for (const a of apis) await a.close();
  });
  /** A server with the given drain_ms and one background send to a recipient the recorder answers after 2 s. */
  async function slowSend(drainMs: number) {
    const api = await startTestApi(backend, {
      'mail:transport:sendmail:path': rec.bin,
      'mail:jobs:send:drain_ms': drainMs,
      'mail:jobs:wake_address': '',
      'mail:send:retry_backoff_seconds': 0,
    });
    apis.push(api);
    const users = await seedUsers(api);
    const d = await draft(api, users.aliceBox.uid, {
      from: 'alice@example.test',
      to: [`slow-${drainMs}@example.net`],
      subject: `drain ${drainMs}`,
    });
    expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })).status).toBe(
      202,
    );
    const job = async () => (await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(d.uid)))!;
    const loop = startSendLoop(sendDepsOf(api.deps), `drain-${drainMs}`);
    // stop only once the hand-off is under way
    for (let i = 0; i < 100 && (await job()).state !== 'handing'; i++) await sleep(20);
    expect((await job()).state).toBe('handing');
    return { loop, job, api, users };
  }

  it('a long enough drain_ms: stop() returns only after the send in progress finished', async () => {
    const { loop, job } = await slowSend(10_000);
    await loop.stop();
    // the transport answers after 2 s: a stop() that returned before it would leave the job handing
    expect((await job()).state).toBe('sent');
  }, 30_000);

  it('a short drain_ms: stop() gives up after it, the send left for the next worker; no new round starts', async () => {
    const { loop, job, api, users } = await slowSend(200);
    await loop.stop();
    // a stop() that had waited for the 2 s transport would find the job sent
    expect((await job()).state).toBe('handing'); // not finished: its lease brings it back to another worker
    // a stopped loop starts nothing, even when woken
    const later = await draft(api, users.aliceBox.uid, {
      from: 'alice@example.test',
      to: ['after-stop@example.net'],
      subject: 'after stop',
    });
    expect(
      (await api.call('POST', `/api/mail/messages/${later.uid}/send`, { token: users.alice, body: { background: true } })).status,
    ).toBe(202);
    loop.wake();
    await sleep(300);
    expect(await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(later.uid))).toMatchObject({
      state: 'queued',
      attempts: 0,
    });
    for (let i = 0; i < 150 && !['sent', 'failed', 'review'].includes((await job()).state); i++) await sleep(50);
    expect((await job()).state).toBe('sent'); // this process's hand-off completed in the background
  }, 30_000);
});
