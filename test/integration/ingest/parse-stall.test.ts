// A message mailparser never finishes parsing (an inline message/rfc822 part without a body; found
// by test/fuzz/targets/mime.ts) must not stall the scan job: a round awaiting it forever would file
// nothing more. Its entry fails on the parse time limit and the queue drains.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const STUCK =
  'From: mallory@remote.example\r\nTo: alice@example.test\r\nSubject: stuck\r\nContent-Type: multipart/mixed; boundary=b\r\n\r\n--b\r\nContent-Disposition: inline\r\nContent-Type: message/rfc822\r\n\r\n--b--\r\n';

describe.each(backends)('a message the MIME parser never finishes ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  beforeAll(async () => {
    f = await ingestFixture(backend);
    w = f.worker({ scanners: 'clean', values: { 'mail:ingest:max_attempts': 1 } });
  });
  afterAll(async () => f?.close());

  it('fails its entry on the parse time limit while the next message is filed', async () => {
    const stuck = await f.deliver({ to: ['alice@example.test'], raw: STUCK, tx: 'stuck-1' });
    const ok = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'after the stuck one' }), tx: 'ok-1' });
    expect([stuck.status, ok.status]).toEqual([202, 202]);
    const started = Date.now();
    await drainQueue(w, 'test-worker');
    expect(Date.now() - started).toBeLessThan(20_000);
    const entries = f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
    const [bad] = await entries.list({ filter: { transactionId: stuck.body.transactionId } });
    const [good] = await entries.list({ filter: { transactionId: ok.body.transactionId } });
    expect(bad).toMatchObject({ state: 'failed', attempts: 1, lastError: expect.stringMatching(/MIME parser did not finish/) });
    expect(good.state).toBe('delivered');
    const filed = await f.api.deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid: f.users.aliceBox.uid } });
    expect(filed.map((m) => m.subject)).toEqual(['after the stuck one']);
  }, 40_000);
});
