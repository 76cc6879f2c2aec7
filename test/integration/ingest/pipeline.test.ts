import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FilterRuleModel, FolderModel, MailboxModel, type Folder } from '../../../lib/mail/index.js';
import {
  AutoReplyModel,
  IngestEntryModel,
  OutboundHandoffModel,
  QuarantineModel,
  type IngestEntry,
  type WorkerDeps,
} from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { SCAN_ENGINE_UNAVAILABLE } from '../../../lib/scan/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { EICAR, GTUBE, freePort, requireScanners, startScanners, type Scanners } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const withScanners = requireScanners();
const backends = await storeBackends();
let scanners: Scanners;
beforeAll(async () => {
  if (!withScanners) return;
  scanners = await startScanners();
}, 150_000);
afterAll(async () => scanners?.stop());

describe.runIf(withScanners).each(backends)('inbound pipeline with real rspamd and clamd ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  const entries = () => f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
  const folder = async (mailboxUid: string, role: string) =>
    (await f.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid, role }))!;
  /** Hand off, run the scan job, answer the entry of the mailbox. */
  const run = async (deps: WorkerDeps, raw: string, opts: { from?: string; to?: string } = {}) => {
    const r = await f.deliver({ from: opts.from, to: [opts.to ?? 'alice@example.test'], raw });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await drainQueue(deps, 'test-worker');
    return (await entries().list({ filter: { transactionId: r.body.transactionId } }))[0];
  };
  beforeAll(async () => {
    f = await ingestFixture(backend);
    w = f.worker({
      env: 'production',
      values: { 'mail:scan:rspamd:url': scanners.rspamdUrl, 'mail:scan:clamd:address': scanners.clamdAddress },
    });
  });
  afterAll(async () => f?.close());

  it('a clean message is filed in the Inbox and announced as message.delivered', async () => {
    const seen: Array<Record<string, unknown>> = [];
    const off = f.api.deps.events.onMail('message.delivered', (_k, p) => void seen.push(p));
    const inboxBefore = (await folder(f.users.aliceBox.uid, 'inbox')).totalCount;
    const e = await run(w, message({ subject: 'clean one' }));
    off();
    expect(e).toMatchObject({ state: 'delivered', folderRole: 'inbox', attempts: 0 });
    expect(e.messageUid).toBeTruthy();
    expect((await folder(f.users.aliceBox.uid, 'inbox')).totalCount).toBe(inboxBefore + 1);
    expect(seen.some((p) => p.messageUid === e.messageUid && p.mailboxUid === f.users.aliceBox.uid)).toBe(true);
  });

  it('GTUBE goes to Junk', async () => {
    const junkBefore = (await folder(f.users.aliceBox.uid, 'junk')).totalCount;
    const e = await run(w, message({ subject: 'gtube', body: `This is the GTUBE\r\n\r\n${GTUBE}\r\n` }));
    expect(e).toMatchObject({ state: 'junk', folderRole: 'junk' });
    expect(e.verdict).toMatchObject({ spam: 'spam', symbols: ['GTUBE'] });
    expect((await folder(f.users.aliceBox.uid, 'junk')).totalCount).toBe(junkBefore + 1);
  });

  it('EICAR goes to Quarantine, not to a folder', async () => {
    const inbox = (await folder(f.users.aliceBox.uid, 'inbox')).totalCount;
    const e = await run(w, message({ subject: 'virus', body: EICAR }));
    expect(e).toMatchObject({ state: 'quarantined', messageUid: null });
    const q = await f.api.deps.store.repo<{ reason: string; detail: string; mailboxUid: string }>(QuarantineModel).get(e.uid);
    expect(q).toMatchObject({ reason: 'virus', detail: 'Eicar-Test-Signature-Local.UNOFFICIAL', mailboxUid: f.users.aliceBox.uid });
    expect((await folder(f.users.aliceBox.uid, 'inbox')).totalCount).toBe(inbox);
  });

  it('rspamd down in production mode: Junk with SCAN_ENGINE_UNAVAILABLE', async () => {
    const down = f.worker({
      env: 'production',
      values: { 'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`, 'mail:scan:clamd:address': scanners.clamdAddress },
    });
    const e = await run(down, message({ subject: 'while rspamd is down' }));
    expect(e).toMatchObject({ state: 'junk', folderRole: 'junk' });
    expect(e.verdict).toMatchObject({ spam: 'suspect', symbols: [SCAN_ENGINE_UNAVAILABLE] });
  });

  it('clamd down: Quarantine (virus scan failed)', async () => {
    const down = f.worker({
      env: 'production',
      values: { 'mail:scan:rspamd:url': scanners.rspamdUrl, 'mail:scan:clamd:address': `127.0.0.1:${await freePort()}` },
    });
    const e = await run(down, message({ subject: 'while clamd is down' }));
    expect(e.state).toBe('quarantined');
    expect(await f.api.deps.store.repo<{ reason: string }>(QuarantineModel).get(e.uid)).toMatchObject({ reason: 'virus-scan-failed' });
  });

  it('in development a scanner that cannot be connected to counts as clean', async () => {
    const dev = f.worker({
      env: 'test',
      values: { 'mail:scan:rspamd:url': scanners.rspamdUrl, 'mail:scan:clamd:address': `127.0.0.1:${await freePort()}` },
    });
    const d = await run(dev, message({ subject: 'dev fallback' }));
    expect(d).toMatchObject({ state: 'delivered' });
    expect(d.verdict).toMatchObject({ devFallback: ['clamd'] });
  });

  it('a transport-rule quarantine overrides a clean scan; headers are viewable; release files in the Inbox', async () => {
    const rule = await f.api.call('POST', '/api/mail/transport-rules', {
      token: f.users.admin,
      body: { name: 'hold invoices', action: 'quarantine', match: { subjectContains: 'INVOICE-HOLD' } },
    });
    expect(rule.status, JSON.stringify(rule.body)).toBe(201);
    const e = await run(w, message({ subject: 'your INVOICE-HOLD 42' }));
    expect(e).toMatchObject({ state: 'quarantined', transportQuarantine: true });
    expect(e.verdict).toMatchObject({ spam: 'clean', virus: null, reason: 'transport-rule' });
    const list = await f.api.call('GET', `/api/mail/quarantine?reason=transport-rule`, { token: f.users.admin });
    expect(list.status).toBe(200);
    expect(list.body.map((q: { uid: string }) => q.uid)).toContain(e.uid);
    expect(list.body[0].headers).toBeUndefined();
    const headers = await f.api.call('GET', `/api/mail/quarantine/${e.uid}/headers`, { token: f.users.admin });
    expect(headers.body.headers).toMatch(/Subject: your INVOICE-HOLD 42/);
    const del = await f.api.call('DELETE', `/api/mail/transport-rules/${rule.body.uid}`, {
      token: f.users.admin,
      body: { version: rule.body.version },
    });
    expect(del.status).toBe(204);
    const inbox = (await folder(f.users.aliceBox.uid, 'inbox')).totalCount;
    const rel = await f.api.call('POST', `/api/mail/quarantine/${e.uid}/release`, { token: f.users.admin });
    expect(rel.status, JSON.stringify(rel.body)).toBe(200);
    expect((await folder(f.users.aliceBox.uid, 'inbox')).totalCount).toBe(inbox + 1);
    expect(await f.api.deps.store.repo(QuarantineModel).get(e.uid)).toBeNull();
  });

  it('over quota goes to Quarantine', async () => {
    const boxes = f.api.deps.store.repo<{ quotaBytes: number; usedBytes: number }>(MailboxModel);
    const bob = (await boxes.get(f.users.bobBox.uid))!;
    await boxes.update(f.users.bobBox.uid, { quotaBytes: bob.usedBytes + 10 });
    const e = await run(w, message({ subject: 'too big for bob' }), { to: 'bob@example.test' });
    expect(e.state).toBe('quarantined');
    expect(await f.api.deps.store.repo<{ reason: string }>(QuarantineModel).get(e.uid)).toMatchObject({ reason: 'over-quota' });
    await boxes.update(f.users.bobBox.uid, { quotaBytes: 0 });
  });

  it('out-of-office answers once per sender per day, never automated mail', async () => {
    await f.api.deps.store
      .repo(AutoReplyModel)
      .create({ mailboxUid: f.users.bobBox.uid, enabled: true, subject: 'Away', body: 'Back on Monday.' } as never);
    const replies = () =>
      f.api.deps.store.repo<{ kind: string; envelopeTo: string[] }>(OutboundHandoffModel).list({ filter: { kind: 'auto-reply' } });
    const from = 'Carol <carol@remote.example>';
    for (let i = 0; i < 3; i++)
      await run(w, message({ from, subject: `note ${i}` }), { from: 'carol@remote.example', to: 'bob@example.test' });
    await run(
      w,
      message({
        from: 'News <news@remote.example>',
        subject: 'weekly',
        headers: { 'List-Id': '<weekly.remote.example>', Precedence: 'bulk' },
      }),
      { from: 'news@remote.example', to: 'bob@example.test' },
    );
    await run(w, message({ from: 'dave@remote.example', subject: 'auto', headers: { 'Auto-Submitted': 'auto-generated' } }), {
      from: 'dave@remote.example',
      to: 'bob@example.test',
    });
    const sent = await replies();
    expect(sent.map((r) => r.envelopeTo)).toEqual([['carol@remote.example']]);
  });

  it('a filter rule forward on non-junk mail is handed to the outbound path once', async () => {
    const rules = f.api.deps.store.repo<Record<string, unknown>>(FilterRuleModel);
    const rule = await rules.create({
      mailboxUid: f.users.aliceBox.uid,
      name: 'fwd',
      enabled: true,
      position: 0,
      match: 'all',
      conditions: [{ field: 'subject', op: 'contains', value: 'FWD-ME' }],
      actions: [{ type: 'forward', to: ['boss@elsewhere.example'] }],
      stop: false,
    });
    const e = await run(w, message({ subject: 'please FWD-ME' }));
    await rules.delete(rule.uid);
    expect(e.state).toBe('delivered');
    const fw = await f.api.deps.store
      .repo<{ kind: string; envelopeTo: string[] }>(OutboundHandoffModel)
      .list({ filter: { kind: 'forward' } });
    expect(fw.map((x) => x.envelopeTo)).toEqual([['boss@elsewhere.example']]);
  });
});
