// A background send answers what happened, and its job starts only after the request's own writes:
// many sends at once while a send worker claims everything that is due. Before, the job was due the
// moment it was written, a worker claimed it before the request had moved the draft to the Outbox,
// and the request answered 409 (or the worker's step failed and waited for its retry) although the
// mail went out. Real HTTP server speaking the cloud API contract, both SQL backends.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runSendRound } from '../../../lib/jobs/send.js';
import { jobUidOf, OutboundJobModel, sendControlHooks, sendDepsOf, type OutboundJob } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { cloudApi, draft, messagesIn } from './helpers.js';

const backends = await sqlBackends();
const SENDS = 30;

describe.each(backends)('background sends while a worker claims at once ($name)', (backend) => {
  let api: TestApi;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  const cloud = cloudApi();
  beforeAll(async () => {
    api = await startTestApi(backend, {
      ...(await cloud.start()),
      'mail:jobs:wake_address': '',
    });
    users = await seedUsers(api);
  }, 60_000);
  afterAll(async () => {
    await api?.close();
    await new Promise<void>((r) => cloud.server.close(() => r()));
  });

  it('every request answers 202, every message is handed over once and ends in Sent Items, no step fails', async () => {
    const drafts = [];
    for (let i = 0; i < SENDS; i++)
      drafts.push(await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: [`r${i}@example.net`], subject: `race ${i}` }));
    const worker = { ...sendDepsOf(api.deps), control: sendControlHooks() };
    const warnings: string[] = [];
    const warn = worker.log.warn.bind(worker.log);
    worker.log = Object.assign(Object.create(worker.log), {
      warn: (...args: Parameters<typeof warn>) => {
        warnings.push(JSON.stringify(args));
        return warn(...args);
      },
    });
    // A worker that claims whatever is due, as fast as it can, while the requests come in.
    let sending = true;
    const rounds = (async () => {
      while (sending) {
        await runSendRound(worker, 'race-worker');
        await new Promise((r) => setImmediate(r));
      }
    })();
    const answers = await Promise.all(
      drafts.map((d) => api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })),
    );
    // Until every job is settled (one due after a crashed request would wait for its lease: none here).
    const jobs = api.deps.store.repo<OutboundJob>(OutboundJobModel);
    for (let i = 0; i < 400 && (await jobs.count({ state: { $ne: 'sent' } })) > 0; i++) await new Promise((r) => setTimeout(r, 25));
    sending = false;
    await rounds;

    expect(answers.map((a) => a.status)).toEqual(drafts.map(() => 202));
    for (const d of drafts) expect(await jobs.get(jobUidOf(d.uid)), d.uid).toMatchObject({ state: 'sent', attempts: 1 });
    const handed = cloud.calls.map((c) => c.to[0]).sort();
    expect(handed).toEqual(drafts.map((_, i) => `r${i}@example.net`).sort());
    const sent = await messagesIn(api.deps, users.aliceBox.uid, 'sent');
    for (let i = 0; i < SENDS; i++) expect(sent.filter((m) => m.subject === `race ${i}`)).toHaveLength(1);
    expect(await messagesIn(api.deps, users.aliceBox.uid, 'outbox')).toEqual([]);
    expect(warnings.filter((w) => /send job step failed|conflict/i.test(w))).toEqual([]);
  }, 60_000);
});
