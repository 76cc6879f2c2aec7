// Transport rules (Spec: Inbound message — "run once per message before recipients are resolved.
// They can reject (a notice goes only to a sender whose DKIM verified), add a header, add a
// recipient, or mark for quarantine. When evaluating the rules fails, delivery continues without
// them") and mail:distribution_lists:max_depth. Real hand-off over HTTP, real database, scan job.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  IngestEntryModel,
  OutboundHandoffModel,
  TransportRuleModel,
  type IngestEntry,
  type WorkerDeps,
} from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { loadRaw, MessageModel, type Message } from '../../../lib/mail/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const dkimPass = (domain: string, authserv = 'mx.example.test') => ({
  'Authentication-Results': `${authserv}; dkim=pass header.d=${domain}`,
});

describe.each(backends)('transport rules and list depth ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  const entries = (transactionId: string) => f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId } });
  const notices = () =>
    f.api.deps.store
      .repo<{ kind: string; envelopeTo: string[]; rawRef: string }>(OutboundHandoffModel)
      .list({ filter: { kind: 'reject-notice' } });
  const addRule = async (body: Record<string, unknown>) => {
    const r = await f.api.call('POST', '/api/mail/transport-rules', { token: f.users.admin, body });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    return r.body as { uid: string; version: number };
  };
  const dropRule = async (rule: { uid: string; version: number }) => {
    expect(
      (await f.api.call('DELETE', `/api/mail/transport-rules/${rule.uid}`, { token: f.users.admin, body: { version: rule.version } }))
        .status,
    ).toBe(204);
  };

  beforeAll(async () => {
    f = await ingestFixture(backend, { 'mail:security:trusted_authserv_id': 'mx.example.test', 'mail:distribution_lists:max_depth': 2 });
    w = f.worker({
      values: {
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
      },
    });
  }, 60_000);
  afterAll(async () => f?.close());

  it('reject: every recipient refused, nothing queued; the notice goes only to a DKIM-verified sender', async () => {
    const rule = await addRule({
      name: 'no invoices',
      action: 'reject',
      match: { subjectContains: 'REJECT-ME' },
      rejectNotice: 'We do not take invoices by mail.',
    });
    const cases = [
      { name: 'verified', headers: dkimPass('remote.example'), notice: true },
      { name: 'unverified', headers: {}, notice: false },
      { name: 'forged results (untrusted authserv-id)', headers: dkimPass('remote.example', 'mx.evil.example'), notice: false },
      { name: 'DKIM of another domain', headers: dkimPass('other.example'), notice: false },
    ];
    for (const c of cases) {
      const before = (await notices()).length;
      const r = await f.deliver({
        to: ['alice@example.test', 'bob@example.test'],
        raw: message({ from: 'Sender <sender@remote.example>', subject: `REJECT-ME ${c.name}`, headers: c.headers }),
      });
      expect(r.status, c.name).toBe(202);
      expect(r.body.queued).toBe(0);
      expect(r.body.results.map((x: { status: string; reason: string }) => [x.status, x.reason])).toEqual([
        ['rejected', 'transport rule no invoices'],
        ['rejected', 'transport rule no invoices'],
      ]);
      expect(await entries(r.body.transactionId)).toHaveLength(0);
      const after = await notices();
      expect(after.length - before, c.name).toBe(c.notice ? 1 : 0);
      if (c.notice) {
        expect(after.at(-1)!.envelopeTo).toEqual(['sender@remote.example']);
        const raw = (await loadRaw(f.api.deps, after.at(-1)!.rawRef)).toString();
        expect(raw).toContain('We do not take invoices by mail.');
        expect(raw).toMatch(/^Auto-Submitted: auto-replied/m);
      }
    }
    await dropRule(rule);
  });

  it('add header: the filed message carries the header', async () => {
    const rule = await addRule({
      name: 'tag external',
      action: 'addHeader',
      match: { senderDomain: 'remote.example' },
      headerName: 'X-Org-Policy',
      headerValue: 'external-mail',
    });
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'tag me' }) });
    await drainQueue(w, 'rules-worker');
    const [e] = await entries(r.body.transactionId);
    expect(e.state).toBe('delivered');
    const m = (await f.api.deps.store.repo<Message>(MessageModel).get(e.messageUid!))!;
    expect((await loadRaw(f.api.deps, m.blobId)).toString()).toMatch(/^X-Org-Policy: external-mail\r$/m);
    await dropRule(rule);
  });

  it('add recipient: a local mailbox gets its own entry, an outside address a relayed copy', async () => {
    const local = await addRule({
      name: 'cc bob',
      action: 'addRecipient',
      match: { subjectContains: 'CC-BOB' },
      recipient: 'bob@example.test',
    });
    const outside = await addRule({
      name: 'archive',
      action: 'addRecipient',
      match: { subjectContains: 'CC-BOB' },
      recipient: 'archive@archive.example',
    });
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'CC-BOB please' }) });
    expect(r.status).toBe(202);
    expect(r.body.results).toEqual([
      { recipient: 'alice@example.test', status: 'queued', mailboxes: 1 },
      { recipient: 'bob@example.test', status: 'queued', mailboxes: 1 },
      { recipient: 'archive@archive.example', status: 'relayed' },
    ]);
    const rows = await entries(r.body.transactionId);
    expect(rows.map((e) => e.mailboxUid).sort()).toEqual([f.users.aliceBox.uid, f.users.bobBox.uid].sort());
    const relays = await f.api.deps.store
      .repo<{ envelopeTo: string[]; rawRef: string }>(OutboundHandoffModel)
      .list({ filter: { kind: 'list-relay' } });
    const relay = relays.find((x) => x.envelopeTo.includes('archive@archive.example'))!;
    expect(relay).toBeTruthy();
    // an administrator's copy keeps the message as it came (no From rewriting for transport-rule copies)
    expect((await loadRaw(f.api.deps, relay.rawRef)).toString()).toMatch(/^From: Sender <sender@remote\.example>\r$/m);
    await drainQueue(w, 'rules-worker');
    expect((await entries(r.body.transactionId)).map((e) => e.state)).toEqual(['delivered', 'delivered']);
    await dropRule(local);
    await dropRule(outside);
  });

  it('an evaluation failure lets delivery continue without the rules', async () => {
    // A stored rule whose pattern no longer compiles (the API refuses it; an older release may have kept one).
    const broken = await f.api.deps.store.repo<Record<string, unknown>>(TransportRuleModel).create({
      name: 'broken',
      enabled: true,
      priority: 1,
      match: { header: { name: 'subject', pattern: '([unclosed' } },
      action: 'reject',
      headerName: null,
      headerValue: null,
      recipient: null,
      rejectNotice: null,
    });
    const hold = await addRule({ name: 'hold everything', action: 'quarantine', priority: 50 });
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'despite the broken rule' }) });
    expect(r.status).toBe(202);
    expect(r.body.results).toEqual([{ recipient: 'alice@example.test', status: 'queued', mailboxes: 1 }]);
    await drainQueue(w, 'rules-worker');
    const [e] = await entries(r.body.transactionId);
    // neither the broken reject nor the (valid) quarantine rule applied: no rules at all
    expect(e).toMatchObject({ state: 'delivered', transportQuarantine: false });
    await f.api.deps.store.repo(TransportRuleModel).delete(broken.uid);
    await dropRule(hold);
  });

  it('mail:distribution_lists:max_depth: lists deeper than the limit are not expanded', async () => {
    const mk = async (address: string, members: string[]) => {
      const r = await f.api.call('POST', '/api/mail/distribution-lists', { token: f.users.admin, body: { address, members } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
    };
    await mk('level3@example.test', ['bob@example.test']);
    await mk('level2@example.test', ['level3@example.test', 'alice@example.test']);
    await mk('level1@example.test', ['level2@example.test']);
    // level1 (depth 1) → level2 (depth 2) → level3 (depth 3 > 2: cut): alice only
    const top = await f.deliver({ to: ['level1@example.test'], raw: message({ subject: 'deep' }) });
    expect(top.body.results).toEqual([{ recipient: 'level1@example.test', status: 'queued', mailboxes: 1 }]);
    expect((await entries(top.body.transactionId)).map((e) => e.mailboxUid)).toEqual([f.users.aliceBox.uid]);
    // from level2 the same lists are within the limit: alice and bob
    const mid = await f.deliver({ to: ['level2@example.test'], raw: message({ subject: 'less deep' }) });
    expect((await entries(mid.body.transactionId)).map((e) => e.mailboxUid).sort()).toEqual(
      [f.users.aliceBox.uid, f.users.bobBox.uid].sort(),
    );
  });
});
