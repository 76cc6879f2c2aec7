// Reliability (TESTING.md: random SIGKILL under load): random SIGKILLs of the real worker daemon.
// Four senders keep handing mail off (1–2 recipients each) while the worker is killed with SIGKILL
// at a random moment after it has started filing, then restarted, several times over. Afterwards a
// fresh worker drains the queue and every acknowledged message is in each recipient mailbox exactly
// once (by sha256), every folder's counters and the mailbox usage equal the rows, and nothing is
// left queued or leased. The kill times come from a seed that is printed (KILL_SEED replays a run).
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../helpers/databases.js';
import {
  daemons,
  drainWithWorker,
  entries,
  exited,
  expectFiledOnce,
  sha,
  type Acknowledged,
  type Daemons,
} from '../integration/ingest/daemons.js';
import { ingestFixture, message, type IngestFixture } from '../integration/ingest/setup.js';

const backends = await sqlBackends();
const KILLS = 4;
const SENDERS = 4;

/** mulberry32: a small seeded generator, so a failing schedule can be replayed. */
function random(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe.each(backends)('worker killed at random under load ($name)', (backend) => {
  let f: IngestFixture;
  let d: Daemons;
  const seed = Number(process.env.KILL_SEED ?? Math.floor(Math.random() * 2 ** 31));

  beforeAll(async () => {
    f = await ingestFixture(backend);
    d = daemons(f);
  }, 60_000);
  afterAll(async () => {
    d?.killAll();
    await f?.close();
  });

  it(`every acknowledged message is filed exactly once after ${KILLS} random SIGKILLs`, async () => {
    // the kill moments and the load's choices draw from separate generators of the same seed
    const rnd = random(seed);
    const pick = random(seed ^ 0x5bd1e995);
    const boxes = [f.users.aliceBox.uid, f.users.bobBox.uid];
    const addresses = ['alice@example.test', 'bob@example.test'];
    const acknowledged: Acknowledged[] = [];
    const refusedAnswers: number[] = [];
    let sending = true;
    let n = 0;
    // The load: senders hand off until the kills are done; only a 202 is an acknowledgement.
    const load = Promise.all(
      Array.from({ length: SENDERS }, async () => {
        while (sending) {
          const i = n++;
          const to = pick() < 0.5 ? [addresses[i % 2]!] : addresses;
          const raw = message({ subject: `under load ${i}`, to: to.join(', '), body: `message ${i} of the kill run, seed ${seed}` });
          const r = await f.deliver({ to, raw, tx: `K${seed}-${i}` });
          if (r.status === 202) acknowledged.push({ sha256: sha(raw), mailboxes: to.map((a) => boxes[addresses.indexOf(a)]!) });
          else refusedAnswers.push(r.status);
          await new Promise((res) => setTimeout(res, 50 + pick() * 100));
        }
      }),
    );

    const kills: Array<{ afterMs: number; filedBefore: number; filedAtKill: number }> = [];
    const delivered = () => entries(f).count({ state: 'delivered' });
    try {
      for (let k = 0; k < KILLS; k++) {
        const worker: ChildProcess = await d.start('worker');
        // wait until this copy has filed something (it starts in seconds), then a random moment later
        const before = await delivered();
        const until = Date.now() + 60_000;
        while ((await delivered()) === before) {
          if (worker.exitCode !== null || Date.now() > until)
            throw new Error(`the worker filed nothing (exit ${worker.exitCode}): ${d.said(worker)}`);
          await new Promise((res) => setTimeout(res, 50));
        }
        const afterMs = Math.round(rnd() * 600);
        await new Promise((res) => setTimeout(res, afterMs));
        worker.kill('SIGKILL');
        expect(await exited(worker)).toBe('SIGKILL');
        kills.push({ afterMs, filedBefore: before, filedAtKill: await delivered() });
      }
    } finally {
      sending = false;
      await load;
    }
    expect(refusedAnswers).toEqual([]);
    expect(kills).toHaveLength(KILLS);
    // at least one kill left work behind for the next copy (a lease or a queued entry)
    expect(await entries(f).count({ state: 'queued' })).toBeGreaterThan(0);

    await drainWithWorker(f, d);
    const tally = await expectFiledOnce(f, acknowledged, boxes);
    expect(tally.duplicates).toBe(0);
    expect(await entries(f).count({ state: 'delivered' })).toBe(tally.checked);
    process.stdout.write(
      `worker SIGKILL under load (${backend.name}, seed ${seed}): ${kills.length} kills, ${acknowledged.length} messages acknowledged, ${tally.checked} copies checked, ${tally.duplicates} duplicates, 0 lost\n`,
    );
  }, 240_000);
});
