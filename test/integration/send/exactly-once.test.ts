// Exactly once at the transport (Spec: Outbound message — "a message is never sent twice"): the
// cloud API gets the same Idempotency-Key on every retry of a hand-off, and a sendmail run killed
// after it read the message is never retried blind (the MTA log decides, else review). Real HTTP
// server speaking the cloud API contract, a sendmail-compatible recorder, both SQL backends.
import { appendFileSync, readdirSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainSends } from '../../../lib/jobs/send.js';
import { attemptKey, jobUidOf, OutboundJobModel, sendControlHooks, sendDepsOf, type OutboundJob } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { cloudApi, draft, messagesIn, recorder, type Recorder } from './helpers.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('exactly once at the transport on %s', (_name, backend) => {
  describe('cloud mail API', () => {
    let api: TestApi;
    let users: Awaited<ReturnType<typeof seedUsers>>;
    const cloud = cloudApi();
    beforeAll(async () => {
      api = await startTestApi(backend, {
        ...(await cloud.start()),
        'mail:send:retry_backoff_seconds': 0,
        'mail:send:max_attempts': 5,
        'mail:jobs:wake_address': '',
      });
      users = await seedUsers(api);
    }, 60_000);
    afterAll(async () => {
      await api?.close();
      await new Promise<void>((r) => cloud.server.close(() => r()));
    });
    const worker = () => ({ ...sendDepsOf(api.deps), control: sendControlHooks() });
    const job = async (uid: string) => (await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(uid)))!;

    it('retries of a hand-off carry one stable Idempotency-Key (the provider can take it once)', async () => {
      const d = await draft(api, users.aliceBox.uid, {
        from: 'alice@example.test',
        to: ['x@example.net', 'y@example.net'],
        subject: 'keyed',
      });
      expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })).status).toBe(
        202,
      );
      const before = cloud.calls.length;
      cloud.script.push(
        () => [503, { error: 'busy' }],
        () => [503, { error: 'busy' }],
      );
      await drainSends(worker(), 'w-api');
      const calls = cloud.calls.slice(before);
      expect(calls).toHaveLength(3);
      expect(new Set(calls.map((c) => c.key)).size).toBe(1);
      expect(calls[0].key).toBe(attemptKey(jobUidOf(d.uid), ['x@example.net', 'y@example.net']));
      expect(new Set(calls.map((c) => c.raw)).size).toBe(1); // the same bytes every time
      expect(await job(d.uid)).toMatchObject({ state: 'sent', attempts: 3, accepted: ['x@example.net', 'y@example.net'] });
    });

    it('a retry for the recipients still pending is another request with its own (again stable) key', async () => {
      const d = await draft(api, users.aliceBox.uid, {
        from: 'alice@example.test',
        to: ['p@example.net', 'q@example.net'],
        subject: 'partly',
      });
      expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })).status).toBe(
        202,
      );
      const before = cloud.calls.length;
      cloud.script.push(
        (to) => [200, { accepted: [to[0]], refused: [{ rcpt: to[1], reason: 'greylisted', permanent: false }] }],
        () => [503, { error: 'busy' }],
      );
      await drainSends(worker(), 'w-api');
      const calls = cloud.calls.slice(before);
      expect(calls.map((c) => c.to)).toEqual([['p@example.net', 'q@example.net'], ['q@example.net'], ['q@example.net']]);
      expect(calls[1].key).not.toBe(calls[0].key);
      expect(calls[2].key).toBe(calls[1].key);
      expect((await job(d.uid)).state).toBe('sent');
    });
  });

  describe('sendmail killed mid hand-off', () => {
    let api: TestApi;
    let rec: Recorder;
    let users: Awaited<ReturnType<typeof seedUsers>>;
    beforeAll(async () => {
      rec = recorder();
      api = await startTestApi(backend, {
        'mail:transport:sendmail:path': rec.bin,
        'mail:transport:sendmail:log_path': rec.log,
        'mail:transport:sendmail:timeout_ms': 800,
        'mail:send:retry_backoff_seconds': 0,
        'mail:send:max_attempts': 2,
        'mail:jobs:wake_address': '',
        'mail:send:rate_limit:max': 1000,
      });
      users = await seedUsers(api);
    }, 60_000);
    afterAll(async () => api?.close());
    const worker = () => ({ ...sendDepsOf(api.deps), control: sendControlHooks() });
    const job = async (uid: string) => (await api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(uid)))!;
    /** Runs the recorder finished (accepted) for a Message-ID. */
    const finished = (messageId: string) => rec.runs().filter((r) => r.eml.includes(messageId)).length;
    const queue = async (to: string, subject: string, messageId: string) => {
      const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: [to], subject, messageId });
      expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })).status).toBe(
        202,
      );
      return d;
    };

    it('killed after reading the message and not in the MTA log: held for review once, never handed over again; the sender is told', async () => {
      const d = await queue('hang-1@example.net', 'ambiguous', `<hang-1-${backend.name}@example.test>`);
      const tmpBefore = readdirSync(rec.dir).filter((f) => f.endsWith('.eml.tmp')).length;
      await drainSends(worker(), 'w-sm');
      const j = await job(d.uid);
      expect(j).toMatchObject({ state: 'review', review: true, attempts: 1, pending: [] });
      expect(j.refused[0]).toMatchObject({ rcpt: 'hang-1@example.net', permanent: false });
      expect(j.refused[0].reason).toMatch(/may or may not have/);
      // exactly one run started (the killed one left its partial files), none after it
      expect(readdirSync(rec.dir).filter((f) => f.endsWith('.eml.tmp')).length).toBe(tmpBefore + 1);
      expect(finished(`<hang-1-${backend.name}@example.test>`)).toBe(0);
      await drainSends(worker(), 'w-sm');
      expect(readdirSync(rec.dir).filter((f) => f.endsWith('.eml.tmp')).length).toBe(tmpBefore + 1);
      const dsn = (await messagesIn(api.deps, users.aliceBox.uid, 'inbox')).find((m) => m.subject.includes('ambiguous'));
      expect(dsn).toBeTruthy();
    }, 30_000);

    it('killed after reading the message and found in the MTA log: counted as handed over (sent), not sent again', async () => {
      const messageId = `<hang-2-${backend.name}@example.test>`;
      // The MTA logged the message before the command was killed (as Postfix's cleanup does).
      appendFileSync(rec.log, `postfix/cleanup[1]: ABC: message-id=${messageId}\n`);
      const d = await queue('hang-2@example.net', 'logged', messageId);
      await drainSends(worker(), 'w-sm');
      expect(await job(d.uid)).toMatchObject({ state: 'sent', review: false, attempts: 1, accepted: ['hang-2@example.net'] });
    }, 30_000);

    it('killed before it read the message: a temporary failure, retried until max_attempts', async () => {
      const d = await queue('stall-1@example.net', 'stalled', `<stall-1-${backend.name}@example.test>`);
      await drainSends(worker(), 'w-sm');
      const j = await job(d.uid);
      expect(j).toMatchObject({ state: 'failed', review: false, attempts: 2 });
      expect(j.refused[0].reason).toMatch(/before reading the whole message/);
    }, 30_000);
  });
});
