// mail:jobs:scan:rounds_in_flight: one worker runs that many scan rounds side by side while the
// queue has work (one parses and scans while another writes), each claiming its own entries; every
// entry is still delivered exactly once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { correspondentUid, recordCorrespondents } from '../../../lib/ingest/delivery-rules.js';
import { CorrespondentModel } from '../../../lib/ingest/models.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();

describe.each(backends)('scan rounds side by side ($name)', (backend) => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  });
  afterAll(async () => f?.close());

  /** Queues n messages to alice, drains with the given rounds in flight; answers the most prepares seen at once. */
  async function drainWith(rounds: number, n: number, tag: string): Promise<{ most: number; w: WorkerDeps }> {
    for (let i = 0; i < n; i++)
      expect((await f.deliver({ to: ['alice@example.test'], raw: message({ subject: `${tag} ${i}` }), tx: `${tag}-${i}` })).status).toBe(
        202,
      );
    // Two messages per claim, each round preparing all of its messages at once: prepares running at
    // once = 2 × rounds running at once.
    const w = f.worker({
      scanners: 'clean',
      values: { 'mail:jobs:scan:rounds_in_flight': rounds, 'mail:jobs:scan:concurrency': 1, 'mail:jobs:scan:batch_size': 2 },
    });
    const prepare = w.port.prepare;
    let now = 0;
    let most = 0;
    w.port.prepare = async (raw) => {
      most = Math.max(most, ++now);
      try {
        await new Promise((r) => setTimeout(r, 25));
        return await prepare(raw);
      } finally {
        now--;
      }
    };
    await drainQueue(w, `${tag}-worker`);
    return { most, w };
  }

  async function filedOnce(tag: string, n: number): Promise<void> {
    const entries = (await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ limit: 1000 })).filter((e) =>
      e.transactionId.startsWith(`mta:${tag}-`),
    );
    expect(entries).toHaveLength(n);
    expect(entries.every((e) => e.state === 'delivered' && e.attempts === 0)).toBe(true);
    const filed = (
      await f.api.deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid: f.users.aliceBox.uid }, limit: 1000 })
    ).filter((m) => m.subject.startsWith(`${tag} `));
    expect(filed.map((m) => m.subject).sort()).toEqual(Array.from({ length: n }, (_, i) => `${tag} ${i}`).sort());
  }

  it('two rounds run at once and deliver every entry once', async () => {
    const { most } = await drainWith(2, 12, 'lanes2');
    expect(most).toBe(4);
    await filedOnce('lanes2', 12);
  });

  it('rounds releasing side by side count a correspondent new to both exactly (no unique violation, no lost count)', async () => {
    const store = f.api.deps.store;
    const box = f.users.bobBox.uid;
    for (let round = 0; round < 4; round++) {
      const address = `new-${round}@remote.example`;
      // Eight transactions, as eight rounds' release commits, each first to see the pair; two pairs in opposite orders.
      await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          store.transaction(async (tx) => {
            const pairs = [
              { mailboxUid: box, address, messages: 2 },
              { mailboxUid: box, address: `other-${round}@remote.example`, messages: 1 },
            ];
            await recordCorrespondents({ store: tx }, i % 2 ? pairs : pairs.reverse());
          }),
        ),
      );
      const rec = await store.repo<{ messages: number; address: string }>(CorrespondentModel).get(correspondentUid(box, address));
      expect(rec).toMatchObject({ address, messages: 16 });
      expect(
        (await store.repo<{ messages: number }>(CorrespondentModel).get(correspondentUid(box, `other-${round}@remote.example`)))?.messages,
      ).toBe(8);
    }
  });

  it('rounds_in_flight = 1: one round at a time, the same result', async () => {
    const { most } = await drainWith(1, 6, 'lanes1');
    expect(most).toBe(2);
    await filedOnce('lanes1', 6);
  });
});
