// Delivery prepares each message once (the one MIME parse, the HTML sanitizer, the stored fields and
// the search document: lib/ingest/prepare.ts) however many mailboxes it is filed to; every copy
// must still read and search as a message of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue, runScanRound } from '../../../lib/jobs/index.js';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { groupStats } from '../../../lib/storage/sql/group-commit.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();

const PDF = Buffer.from([
  0x25, 0x50, 0x44, 0x46, 0x2d, 0x31, 0x2e, 0x34, 0x0a, 0x00, 0xff, 0xfe, 0x80, 0x81, 0x0d, 0x0a, 0x25, 0x25, 0x45, 0x4f, 0x46,
]);
const mixed = (subject: string) =>
  [
    'From: "Bob Example" <bob@remote.example>',
    'To: alice@example.test, "Carol" <carol@example.test>',
    'Cc: dave@example.test',
    `Subject: ${subject}`,
    'Message-ID: <prepared-1@remote.example>',
    'Date: Tue, 24 Nov 2026 10:00:00 +0000',
    'MIME-Version: 1.0',
    'Content-Type: multipart/mixed; boundary="outer"',
    '',
    '--outer',
    'Content-Type: multipart/alternative; boundary="alt"',
    '',
    '--alt',
    'Content-Type: text/plain; charset=iso-8859-1',
    'Content-Transfer-Encoding: quoted-printable',
    '',
    'Gr=FC=DFe: the quarterly zebrafish report.',
    '',
    '--alt',
    'Content-Type: text/html; charset=utf-8',
    '',
    '<p onclick="steal()">the quarterly <b>zebrafish</b> report</p><script>alert(1)</script>',
    '',
    '--alt--',
    '--outer',
    'Content-Type: application/pdf; name="report.pdf"',
    'Content-Disposition: attachment; filename="report.pdf"',
    'Content-Transfer-Encoding: base64',
    '',
    PDF.toString('base64'),
    '',
    '--outer',
    'Content-Type: text/calendar; method=REQUEST; charset=utf-8',
    '',
    'BEGIN:VCALENDAR',
    'VERSION:2.0',
    'METHOD:REQUEST',
    'BEGIN:VEVENT',
    'UID:prepared-event-1',
    'DTSTART:20261201T100000Z',
    'DTEND:20261201T110000Z',
    'SUMMARY:Review',
    'END:VEVENT',
    'END:VCALENDAR',
    '',
    '--outer--',
    '',
  ].join('\r\n');

describe.each(backends)('a message filed to several mailboxes ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  beforeAll(async () => {
    f = await ingestFixture(backend);
    w = f.worker({ scanners: 'clean' });
  });
  afterAll(async () => f?.close());

  it('is prepared once, filed to every recipient once with its fields, and found by a word of its body', async () => {
    const r = await f.deliver({ to: ['alice@example.test', 'bob@example.test'], raw: mixed('Prepared once'), tx: 'prepared-1' });
    expect(r.status).toBe(202);
    const prepare = w.port.prepare;
    let prepared = 0;
    w.port.prepare = (raw) => (prepared++, prepare(raw));
    try {
      await drainQueue(w, 'test-worker');
    } finally {
      w.port.prepare = prepare;
    }
    expect(prepared).toBe(1);
    const entries = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: r.body.transactionId } });
    expect(entries.map((e) => e.state)).toEqual(['delivered', 'delivered']);
    const messages = f.api.deps.store.repo<Message>(MessageModel);
    for (const box of [f.users.aliceBox.uid, f.users.bobBox.uid]) {
      const [m] = await messages.list({ filter: { mailboxUid: box } });
      expect(m).toMatchObject({
        subject: 'Prepared once',
        hasAttachments: true,
        fromAddress: 'bob@remote.example',
        messageId: '<prepared-1@remote.example>',
        preview: 'Grüße: the quarterly zebrafish report.',
      });
      expect(m.cc).toEqual([{ address: 'dave@example.test', name: '' }]);
      expect(m.attachments.map((a) => a.filename)).toContain('report.pdf');
      const found = await messages.search('zebrafish', { filter: { mailboxUid: box } });
      expect(found.map((x) => x.uid)).toEqual([m.uid]);
    }
  });

  it('a message that cannot be prepared is tried once in a round: each of its entries fails alike and is retried later', async () => {
    const r = await f.deliver({
      to: ['alice@example.test', 'bob@example.test'],
      raw: message({ subject: 'Not now' }),
      tx: 'prepare-fails-1',
    });
    expect(r.status).toBe(202);
    const prepare = w.port.prepare;
    let tried = 0;
    w.port.prepare = () => (tried++, Promise.reject(new Error('parser gave up')));
    let round;
    try {
      round = await runScanRound(w, 'test-worker');
    } finally {
      w.port.prepare = prepare;
    }
    expect(tried).toBe(1);
    expect(round).toMatchObject({ claimed: 2, finished: 0, retried: 2 });
    const entries = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: r.body.transactionId } });
    expect(entries.map((e) => [e.state, e.attempts, e.lastError])).toEqual([
      ['queued', 1, 'parser gave up'],
      ['queued', 1, 'parser gave up'],
    ]);
    await drainQueue(w, 'test-worker');
    const after = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: r.body.transactionId } });
    expect(after.map((e) => e.state)).toEqual(['delivered', 'delivered']);
  });

  if (backend.name === 'sqlite')
    it("files a round's copies together: one filing transaction for all of them, then the closing one", async () => {
      for (let i = 0; i < 12; i++)
        expect(
          (
            await f.deliver({
              to: ['alice@example.test', 'bob@example.test'],
              raw: message({ subject: `Side by side ${i}` }),
              tx: `side-${i}`,
            })
          ).status,
        ).toBe(202);
      const before = { ...groupStats };
      const round = await runScanRound(w, 'test-worker');
      expect(round).toMatchObject({ claimed: 24, finished: 24 });
      // The 24 copies in one transaction (lib/mail FilingBatch) and the round's closing one; filed one
      // by one they took 25 transactions.
      expect(groupStats.members - before.members).toBe(2);
      expect(groupStats.transactions - before.transactions).toBeLessThanOrEqual(2);
    });
});
