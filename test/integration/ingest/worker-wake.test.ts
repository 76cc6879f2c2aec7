// The worker daemon's wake-up address: POST /wake/<job> wakes that job (a hand-off wakes the scan
// job only), POST /wake every job, anything else 404. The scan period here is an hour, so a filed
// message proves that the hand-off's wake-up reached the scan job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { daemons, type Daemons } from './daemons.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const [sqlite] = await storeBackends();

describe('waking the worker daemon', () => {
  let f: IngestFixture;
  let d: Daemons;
  let wake: string;
  beforeAll(async () => {
    wake = `127.0.0.1:${await freePort()}`;
    f = await ingestFixture(sqlite, { 'mail:jobs:wake_address': wake });
    d = daemons(f);
    const worker = await d.start('worker', {}, { 'mail:jobs:wake_address': wake, 'mail:jobs:scan:interval_seconds': 3600 });
    for (let i = 0; ; i++) {
      const up = await fetch(`http://${wake}/wake/scan`, { method: 'POST' }).then(
        (r) => r.status,
        () => 0,
      );
      if (up === 204) break;
      if (i > 300 || worker.exitCode !== null) throw new Error(`worker did not listen: ${d.said(worker)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }, 60_000);
  afterAll(async () => {
    d?.killAll();
    await f?.close();
  });

  it('answers 204 for each job and for all, 404 for anything else', async () => {
    for (const path of ['/wake', '/wake/scan', '/wake/send', '/wake/export', '/wake/lifecycle']) {
      expect([path, (await fetch(`http://${wake}${path}`, { method: 'POST' })).status]).toEqual([path, 204]);
    }
    for (const path of ['/wake/constructor', '/wake/nope', '/wake/scan/x', '/wakeup']) {
      expect([path, (await fetch(`http://${wake}${path}`, { method: 'POST' })).status]).toEqual([path, 404]);
    }
    expect((await fetch(`http://${wake}/wake/scan`)).status).toBe(404); // POST only
  });

  it('a hand-off wakes the scan job: the message is filed long before the scan period', async () => {
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'Woken' }), tx: 'wake-1' });
    expect(r.status).toBe(202);
    const messages = f.api.deps.store.repo<Message>(MessageModel);
    let filed: Message[] = [];
    for (let i = 0; i < 150 && !filed.length; i++) {
      await new Promise((res) => setTimeout(res, 100));
      filed = await messages.list({ filter: { mailboxUid: f.users.aliceBox.uid, subject: 'Woken' } });
    }
    expect(filed).toHaveLength(1);
  }, 30_000);

  it('a message sent to a local mailbox wakes the scan job too: in the inbox within 2 s', async () => {
    const draft = await f.api.call('POST', '/api/mail/compose', {
      token: f.users.alice,
      body: { mailboxUid: f.users.aliceBox.uid, to: ['bob@example.test'], subject: 'Internal and quick', text: 'hello bob' },
    });
    expect(draft.status, JSON.stringify(draft.body)).toBe(201);
    const t0 = Date.now();
    const sent = await f.api.call('POST', `/api/mail/messages/${draft.body.uid}/send`, { token: f.users.alice, body: {} });
    expect(sent.status, JSON.stringify(sent.body)).toBeLessThan(300);
    const messages = f.api.deps.store.repo<Message>(MessageModel);
    let filed: Message[] = [];
    while (!filed.length && Date.now() - t0 < 5000) {
      await new Promise((res) => setTimeout(res, 50));
      filed = await messages.list({ filter: { mailboxUid: f.users.bobBox.uid, subject: 'Internal and quick' } });
    }
    expect(filed).toHaveLength(1);
    expect(Date.now() - t0).toBeLessThan(2000);
  }, 30_000);
});
