// Reliability: the named ingest crash points (lib/crash-points, TESTING.md Reliability). The real
// api daemon is killed (SIGKILL) after the raw message is stored and after the first queue row,
// before it answered the MTA, which then retries; the real worker daemon is killed inside the filing
// transaction, between a message and its filter-rule copy, and after filing before the event. After
// each restart every acknowledged message is in each recipient's mailbox exactly once (by sha256),
// nothing is half-filed (folder counters and mailbox usage equal the real rows), and the queue drains.
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { drainQueue } from '../../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import {
  daemons,
  drainWithWorker,
  entries,
  exited,
  expectConsistent,
  expectFiledOnce,
  sha,
  type Acknowledged,
  type Daemons,
} from './daemons.js';
import { ingestFixture, INGEST_SECRET, message, type IngestFixture } from './setup.js';

const backends = await storeBackends({ spawns: true });
const API_POINTS = ['ingest.after-blob', 'ingest.after-queue-row'];
const WORKER_POINTS = ['ingest.mid-filing', 'ingest.between-copies', 'ingest.before-event'];

describe.each(backends)('ingest crash points ($name)', (backend) => {
  let f: IngestFixture;
  let d: Daemons;
  let copies: string;
  const tally = { survived: 0, checked: 0, duplicates: 0 };
  /** What the MTA was told 202 for. */
  const acknowledged: Acknowledged[] = [];
  /** A "copy-me" message lands twice in alice's mailbox (Inbox and the rule's copy). */
  const copiedTwiceForAlice = (mailboxUid: string) => (mailboxUid === f.users.aliceBox.uid ? 2 : 1);

  beforeAll(async () => {
    f = await ingestFixture(backend);
    d = daemons(f);
    // A filter rule that copies "copy-me" mail into a second folder: the copy is a second filing.
    copies = (
      await f.api.call('POST', '/api/mail/folders', { token: f.users.alice, body: { mailboxUid: f.users.aliceBox.uid, name: 'Copies' } })
    ).body.uid;
    const rule = await f.api.call('POST', '/api/mail/mail-filter-rules', {
      token: f.users.alice,
      body: {
        mailboxUid: f.users.aliceBox.uid,
        name: 'copy',
        conditions: [{ field: 'subject', op: 'contains', value: 'copy-me' }],
        actions: [{ type: 'copy', folderUid: copies }],
      },
    });
    expect(rule.status).toBe(201);
  }, 60_000);
  afterAll(async () => {
    d?.killAll();
    await f?.close();
  });

  /** The api daemon on its own port, once it answers. */
  async function apiDaemon(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
    const port = await freePort();
    const child = await d.start('api', env, { 'listen:api': `127.0.0.1:${port}` });
    const url = `http://127.0.0.1:${port}`;
    // Generous: every start loads the whole daemon (seconds, more on a loaded machine).
    for (let i = 0; i < 600 && child.exitCode === null; i++) {
      if (
        await fetch(`${url}/api/status`).then(
          (r) => r.ok,
          () => false,
        )
      )
        return { child, url };
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`the api daemon did not come up (exit ${child.exitCode}): ${d.said(child)}`);
  }

  const handoff = (url: string, raw: Buffer, to: string[], tx: string) =>
    fetch(`${url}/internal/mta/deliver`, {
      method: 'POST',
      body: new Uint8Array(raw),
      headers: {
        authorization: `Bearer ${INGEST_SECRET}`,
        'content-type': 'message/rfc822',
        'x-envelope-from': 'sender%40remote.example',
        'x-envelope-to': to.map(encodeURIComponent).join(','),
        'x-transaction-id': tx,
      },
    });

  const boxes = () => [f.users.aliceBox.uid, f.users.bobBox.uid];
  async function check(): Promise<void> {
    const t = await expectFiledOnce(f, acknowledged, boxes());
    tally.checked = t.checked;
    tally.duplicates = t.duplicates;
    // each rule copy is in the rule's folder
    for (const a of acknowledged.filter((x) => x.copiesIn)) {
      const rows = await f.api.deps.store
        .repo<Message>(MessageModel)
        .list({ filter: { mailboxUid: f.users.aliceBox.uid, blobId: a.sha256 }, limit: 10 });
      expect(rows.map((m) => m.folderUid)).toContain(copies);
    }
  }

  // The api-side points on the first backend; the filing points everywhere (a transaction cut short
  // is undone differently by SQLite and PostgreSQL). Each daemon start costs seconds:
  // after an api crash the MTA's retry goes to the test's own api on the same store and data_dir,
  // and the queue is worked off in-process (the worker is not what crashed).
  for (const point of backend === backends[0] ? API_POINTS : []) {
    it(`api killed at ${point}: the MTA's retry is accepted, each recipient gets one copy`, async () => {
      const raw = message({ subject: point, to: 'alice@example.test, bob@example.test' });
      const tx = `crash-${point}-${backend.name}`;
      const crashing = await apiDaemon({ SVCMAIL_CRASH_AT: `${point}:1` });
      const lost = await handoff(crashing.url, Buffer.from(raw), ['alice@example.test', 'bob@example.test'], tx).then(
        (r) => r.status,
        () => 'no answer',
      );
      expect(lost).toBe('no answer'); // never acknowledged: the MTA keeps the message and retries
      expect(await exited(crashing.child)).toBe('SIGKILL');
      const retry = await f.deliver({ to: ['alice@example.test', 'bob@example.test'], raw, tx });
      expect(retry.status).toBe(202);
      // A message's queue rows commit together in one write. A crash before it (after the blob)
      // leaves none, so the retry queues both recipients; a crash after it (before the 202) leaves
      // both, so the retry finds them queued. Either way each recipient gets one copy.
      const statuses = (retry.body.results as Array<{ status: string }>).map((r) => r.status).sort();
      expect(statuses).toEqual(point === 'ingest.after-queue-row' ? ['duplicate', 'duplicate'] : ['queued', 'queued']);
      acknowledged.push({ sha256: sha(raw), mailboxes: boxes() });
      await drainQueue(f.worker({ scanners: 'clean' }), 'crash-test');
      await check();
      tally.survived += 1;
    }, 120_000);
  }

  for (const point of backend === backends[0] ? WORKER_POINTS : ['ingest.mid-filing']) {
    it(`worker killed at ${point}: after a restart every acknowledged message is filed once, nothing half-filed`, async () => {
      // A word of its own per message: search finds every filed copy once its round committed.
      const word = (i: number) => `w${point.replace(/\W/g, '')}${backend.name}n${i}`;
      for (let i = 0; i < 4; i++) {
        const raw = message({ subject: `${point} ${i} copy-me ${word(i)}`, to: 'alice@example.test, bob@example.test' });
        const r = await f.deliver({ to: ['alice@example.test', 'bob@example.test'], raw, tx: `${point}-${i}-${backend.name}` });
        expect(r.status).toBe(202);
        acknowledged.push({ sha256: sha(raw), mailboxes: boxes(), copiesIn: copiedTwiceForAlice });
      }
      // The second pass, so one filing of the batch has committed before the process dies.
      const crashing = await d.start('worker', { SVCMAIL_CRASH_AT: `${point}:2` });
      expect(await exited(crashing)).toBe('SIGKILL');
      expect(await entries(f).count({ state: 'queued' })).toBeGreaterThan(0);
      await expectConsistent(f, boxes()); // right after the kill, before any restart: the cut transaction left nothing behind
      await drainWithWorker(f, d);
      await check();
      // The full-text documents are written when a round releases its entries: the copies filed
      // before the kill get theirs from the re-delivery that finds them filed.
      const messages = f.api.deps.store.repo<Message>(MessageModel);
      for (let i = 0; i < 4; i++) {
        expect((await messages.search(word(i), { filter: { mailboxUid: f.users.aliceBox.uid }, limit: 10 })).length).toBe(2);
        expect((await messages.search(word(i), { filter: { mailboxUid: f.users.bobBox.uid }, limit: 10 })).length).toBe(1);
      }
      tally.survived += 1;
    }, 120_000);
  }

  afterAll(() => {
    if (tally.survived)
      process.stdout.write(
        `ingest crash points (${backend.name}): ${tally.survived} crash points survived, ${tally.checked} messages checked, ${tally.duplicates} duplicates\n`,
      );
  });
});
