// Reliability, fault injection: the transport hanging. The sendmail command never exits — once without
// reading the message (a wedged MTA), once after reading it (it may have queued it). The send route
// answers within mail:transport:sendmail:timeout_ms with a clean error, the message is not lost (it
// stays in Drafts or the Outbox) and is never handed over twice (Spec: Outbound message).
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainSends } from '../../lib/jobs/send.js';
import { FolderModel, MessageModel, type Folder, type Message } from '../../lib/mail/index.js';
import { jobUidOf, OutboundJobModel, sendControlHooks, sendDepsOf, type OutboundJob } from '../../lib/send/index.js';
import { sqlBackends } from '../helpers/databases.js';
import { problemsOf } from './faults.js';
import { mustStatus, startWorld, type World } from './world.js';

const backends = await sqlBackends();
const SEND_TIMEOUT = 1000;
const SLACK_MS = 8000;

// A sendmail-compatible command steered by the file "mode" beside it: stall (never reads, never
// exits), hang (reads the message, never exits), anything else: records the message and exits 0.
const SCRIPT = `#!/bin/sh
d=$(dirname "$0")
case "$(cat "$d/mode" 2>/dev/null)" in
  stall) exec sleep 3600 ;;
  hang) cat > /dev/null; exec sleep 3600 ;;
esac
n=$(date +%s%N)-$$
cat > "$d/out/$n.eml"
exit 0
`;

describe.each(backends)('the transport hanging ($name)', (backend) => {
  let w: World;
  let dir: string;
  const counts = { faults: 0, leaks: 0 };
  const setMode = (m: 'stall' | 'hang' | 'ok') => writeFileSync(join(dir, 'mode'), m);
  /** Messages the command finished taking, by Message-ID. */
  const handedOver = (messageId: string) =>
    readdirSync(join(dir, 'out')).filter((f) => readFileSync(join(dir, 'out', f), 'utf8').includes(messageId)).length;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-hang-sendmail-'));
    mkdirSync(join(dir, 'out'));
    writeFileSync(join(dir, 'sendmail'), SCRIPT);
    chmodSync(join(dir, 'sendmail'), 0o755);
    setMode('ok');
    w = await startWorld(backend, {
      'mail:transport:sendmail:path': join(dir, 'sendmail'),
      'mail:transport:sendmail:timeout_ms': SEND_TIMEOUT,
      'mail:send:retry_backoff_seconds': 600,
      'mail:send:max_attempts': 5,
      'mail:send:rate_limit:max': 1000,
    });
  }, 120_000);
  afterAll(async () => {
    await w?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  let n = 0;
  async function newDraft() {
    n += 1;
    const d = mustStatus(
      'draft',
      await w.api.call('POST', '/api/mail/compose', {
        token: w.tokens.alice,
        body: { mailboxUid: w.ids.mailbox, to: ['someone@example.net'], subject: `hang ${n}`, text: 'hello' },
      }),
      201,
    );
    const msg = (await w.api.deps.store.repo<Message>(MessageModel).get(d.uid))!;
    return msg;
  }
  const folderRole = async (m: Message & { uid: string }) => {
    const now = (await w.api.deps.store.repo<Message>(MessageModel).get(m.uid))!;
    return { role: (await w.api.deps.store.repo<Folder>(FolderModel).get(now.folderUid))!.role, draft: now.draft };
  };
  const job = async (uid: string) => (await w.api.deps.store.repo<OutboundJob>(OutboundJobModel).get(jobUidOf(uid)))!;
  const send = async (uid: string, body: unknown = {}) => {
    const t0 = Date.now();
    const res = await fetch(`${w.api.url}/api/mail/messages/${uid}/send`, {
      method: 'POST',
      body: JSON.stringify(body),
      headers: { authorization: `Bearer ${w.tokens.alice}`, 'content-type': 'application/json' },
    });
    return { status: res.status, text: await res.text(), headers: res.headers, ms: Date.now() - t0 };
  };
  const worker = () => ({ ...sendDepsOf(w.api.deps), control: sendControlHooks() });

  it('synchronous send, command never reads: 502 within the time limit, the draft stays in Drafts; resent later exactly once', async () => {
    const d = await newDraft();
    setMode('stall');
    const a = await send(d.uid);
    setMode('ok');
    counts.faults += 1;
    expect(a.ms).toBeGreaterThanOrEqual(SEND_TIMEOUT - 50);
    expect(a.ms).toBeLessThan(SEND_TIMEOUT + SLACK_MS);
    expect(a.status).toBe(502);
    expect(JSON.parse(a.text)).toMatchObject({ code: 'api-115', status: 502 });
    const found = problemsOf(a, { expectError: true, extra: [dir], allowed5xx: ['api-115'] });
    counts.leaks += found.filter((p) => p.startsWith('leak')).length;
    expect(found).toEqual([]);
    expect(await folderRole(d)).toEqual({ role: 'drafts', draft: true });
    expect(handedOver(d.messageId!)).toBe(0);
    // The user sends again once the MTA is back: handed over once, filed in Sent Items.
    const again = await send(d.uid);
    expect(again.status, again.text).toBe(200);
    expect(handedOver(d.messageId!)).toBe(1);
    expect((await folderRole(d)).role).toBe('sent');
  }, 60_000);

  it('synchronous send, command hangs after reading the message: clean error in time, held for review, never handed over again', async () => {
    const d = await newDraft();
    setMode('hang');
    const a = await send(d.uid);
    setMode('ok');
    counts.faults += 1;
    expect(a.ms).toBeLessThan(SEND_TIMEOUT + SLACK_MS);
    expect(a.status).toBe(502);
    expect(problemsOf(a, { expectError: true, extra: [dir], allowed5xx: ['api-115'] })).toEqual([]);
    // It may have left: the draft is kept (nothing lost) but a resend must not hand it over blind.
    expect((await folderRole(d)).role).toBe('drafts');
    expect(await job(d.uid)).toMatchObject({ state: 'review', review: true });
    const again = await send(d.uid);
    expect(again.status).toBe(409);
    expect(JSON.parse(again.text)).toMatchObject({ code: 'api-120' });
    await drainSends(worker(), 'w-review');
    expect(handedOver(d.messageId!)).toBe(0);
  }, 60_000);

  it('background send, command never reads: the message waits in the Outbox and goes exactly once when the MTA is back', async () => {
    const d = await newDraft();
    setMode('stall');
    const a = await send(d.uid, { background: true });
    expect(a.status).toBe(202);
    expect((await folderRole(d)).role).toBe('outbox');
    const t0 = Date.now();
    await drainSends(worker(), 'w-stall');
    counts.faults += 1;
    expect(Date.now() - t0).toBeLessThan(SEND_TIMEOUT + SLACK_MS);
    expect(await job(d.uid)).toMatchObject({ state: 'queued', attempts: 1 });
    expect((await folderRole(d)).role).toBe('outbox');
    setMode('ok');
    // The backoff has passed (mail:send:retry_backoff_seconds is long here, so the first drain stops after one try).
    await w.api.deps.store.repo<OutboundJob>(OutboundJobModel).update(jobUidOf(d.uid), { nextAttemptAt: new Date() });
    await drainSends(worker(), 'w-ok');
    await drainSends(worker(), 'w-ok-2');
    expect(await job(d.uid)).toMatchObject({ state: 'sent', attempts: 2 });
    expect(handedOver(d.messageId!)).toBe(1);
    expect((await folderRole(d)).role).toBe('sent');
  }, 60_000);

  it('background send, command hangs after reading: held for review in the Outbox, never handed over again', async () => {
    const d = await newDraft();
    setMode('hang');
    expect((await send(d.uid, { background: true })).status).toBe(202);
    await drainSends(worker(), 'w-hang');
    setMode('ok');
    counts.faults += 1;
    expect(await job(d.uid)).toMatchObject({ state: 'review', review: true, attempts: 1 });
    await drainSends(worker(), 'w-after');
    expect(handedOver(d.messageId!)).toBe(0);
    expect((await folderRole(d)).role).toBe('outbox');
    // eslint-disable-next-line no-console -- the figures of the run, for the report
    console.log(
      `reliability: transport hanging (${backend.name}): faults tried ${counts.faults}, routes checked 1 (send) + the send job, leaks ${counts.leaks}`,
    );
  }, 60_000);
});
