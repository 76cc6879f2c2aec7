// Spec: Trusting sender verification — "relayed list and forwarding copies get a rewritten From"
// while the sender is not verified; a verified sender's From is kept. The copies go through the
// outbound hand-off; the send job DKIM-signs a rewritten copy for our domain (checked by mailauth).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OutboundHandoffModel, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { loadRaw, MessageModel, type Message } from '../../../lib/mail/index.js';
import { generateDkimKey } from '../../../lib/pki/index.js';
import { adoptHandoffs, OutboundJobModel, relayJobUid, sendDepsOf, type OutboundJob } from '../../../lib/send/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const VERIFIED = 'Authentication-Results: mx.example.test; dkim=pass header.d=remote.example; dmarc=pass header.from=remote.example';
const FORGED = 'mx.evil.example; dkim=pass header.d=remote.example; dmarc=pass header.from=remote.example';

describe.each(backends)('rewritten From for relayed and forwarded copies ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  let dkimDir: string;
  let txt: string;
  const handoffs = (kind: string) =>
    f.api.deps.store
      .repo<{ uid: string; kind: string; envelopeTo: string[]; rawRef: string }>(OutboundHandoffModel)
      .list({ filter: { kind }, sort: [{ field: 'createdAt', dir: 'asc' }] });
  const rawOf = async (ref: string) => (await loadRaw(f.api.deps, ref)).toString('utf8');
  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mail._domainkey.example.test') return [[txt]];
    throw Object.assign(new Error('no such record'), { code: 'ENOTFOUND' });
  };

  beforeAll(async () => {
    const key = await generateDkimKey();
    txt = key.dnsTxt;
    dkimDir = mkdtempSync(join(tmpdir(), 'svcmail-rewrite-dkim-'));
    writeFileSync(join(dkimDir, 'example.test.mail.key'), key.privateKeyPem, { mode: 0o600 });
    f = await ingestFixture(backend, { 'mail:security:trusted_authserv_id': 'mx.example.test', 'mail:dkim:dir': dkimDir });
    w = f.worker({
      values: {
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
      },
    });
    const list = await f.api.call('POST', '/api/mail/distribution-lists', {
      token: f.users.admin,
      body: { address: 'team@example.test', members: ['alice@example.test', 'partner@elsewhere.example'] },
    });
    expect(list.status, JSON.stringify(list.body)).toBe(201);
  }, 60_000);
  afterAll(async () => {
    await f?.close();
    rmSync(dkimDir, { recursive: true, force: true });
  });

  it('an unverified sender\'s list copy for external members: From "<name> via <list>" <list>, Reply-To and X-Original-From the author', async () => {
    // no Authentication-Results at all, then one from an authserv-id we do not trust
    for (const [i, extra] of [
      [0, {}],
      [1, { 'Authentication-Results': FORGED }],
    ] as const) {
      const before = (await handoffs('list-relay')).length;
      const r = await f.deliver({
        to: ['team@example.test'],
        raw: message({ from: '"Sam Sender" <sender@remote.example>', subject: `to the team ${i}`, headers: extra }),
      });
      expect(r.status).toBe(202);
      const relays = await handoffs('list-relay');
      expect(relays).toHaveLength(before + 1);
      const raw = await rawOf(relays.at(-1)!.rawRef);
      expect(relays.at(-1)!.envelopeTo).toEqual(['partner@elsewhere.example']);
      expect(raw).toMatch(/^From: "Sam Sender via team@example\.test" <team@example\.test>\r$/m);
      expect(raw).toMatch(/^Reply-To: "Sam Sender" <sender@remote\.example>\r$/m);
      expect(raw).toMatch(/^X-Original-From: "Sam Sender" <sender@remote\.example>\r$/m);
      expect(raw.match(/^From:/gm)).toHaveLength(1);
      expect(raw).toContain(`Subject: to the team ${i}`);
    }
  });

  it("a verified sender's list copy keeps its From; the member inside gets the original either way", async () => {
    const r = await f.deliver({
      to: ['team@example.test'],
      raw: `${VERIFIED}\r\n${message({ from: '"Sam Sender" <sender@remote.example>', subject: 'verified to the team' })}`,
    });
    expect(r.status).toBe(202);
    const raw = await rawOf((await handoffs('list-relay')).at(-1)!.rawRef);
    expect(raw).toContain('Subject: verified to the team');
    expect(raw).toMatch(/^From: "Sam Sender" <sender@remote\.example>\r$/m);
    expect(raw).not.toMatch(/^(X-Original-From|Reply-To):/m);
  });

  it('the send job signs a rewritten copy for our domain (mailauth: pass) and leaves a kept author From unsigned', async () => {
    await adoptHandoffs(sendDepsOf(f.api.deps), 100);
    const jobs = f.api.deps.store.repo<OutboundJob>(OutboundJobModel);
    const relays = await handoffs('list-relay');
    const rewritten = (await jobs.get(relayJobUid(relays[0].uid)))!;
    const signed = await loadRaw(f.api.deps, rewritten.rawRef);
    const v = await dkimVerify(signed, { resolver });
    expect(v.results[0].status.result).toBe('pass');
    expect(v.results[0].signingDomain).toBe('example.test');
    const kept = (await jobs.get(relayJobUid(relays.at(-1)!.uid)))!;
    expect((await loadRaw(f.api.deps, kept.rawRef)).toString()).not.toMatch(/^DKIM-Signature:/im);
    expect(kept.pending).toEqual(['partner@elsewhere.example']);
  });

  it('a filter-rule forward: rewritten From for an unverified sender, kept for a verified one', async () => {
    const rule = await f.api.call('POST', '/api/mail/mail-filter-rules', {
      token: f.users.alice,
      body: {
        mailboxUid: f.users.aliceBox.uid,
        name: 'fwd',
        conditions: [{ field: 'subject', op: 'contains', value: 'FWD' }],
        actions: [{ type: 'forward', to: ['home@elsewhere.example'] }],
      },
    });
    expect(rule.status).toBe(201);
    const unverified = await f.deliver({
      to: ['alice@example.test'],
      raw: message({ from: 'Sam Sender <sender@remote.example>', subject: 'FWD one' }),
    });
    const verified = await f.deliver({
      to: ['alice@example.test'],
      raw: `${VERIFIED}\r\n${message({ from: 'Sam Sender <sender@remote.example>', subject: 'FWD two' })}`,
    });
    expect([unverified.status, verified.status]).toEqual([202, 202]);
    await drainQueue(w, 'rewrite-worker');
    const fw = await handoffs('forward');
    expect(fw).toHaveLength(2);
    const bySubject = new Map(
      await Promise.all(
        fw.map(async (h) => {
          const raw = await rawOf(h.rawRef);
          return [/^Subject: (.*)\r$/m.exec(raw)![1], raw] as const;
        }),
      ),
    );
    expect(bySubject.get('FWD one')).toMatch(/^From: "Sam Sender via alice@example\.test" <no-reply@example\.test>\r$/m);
    expect(bySubject.get('FWD one')).toMatch(/^Reply-To: Sam Sender <sender@remote\.example>\r$/m);
    expect(bySubject.get('FWD two')).toMatch(/^From: Sam Sender <sender@remote\.example>\r$/m);
    expect(bySubject.get('FWD two')).not.toMatch(/^X-Original-From:/m);
    expect(fw.every((h) => h.envelopeTo.join() === 'home@elsewhere.example')).toBe(true);
    // the filed copies remember whether their sender was verified (Safe Senders' images need it)
    const filed = await f.api.deps.store
      .repo<Message>(MessageModel)
      .list({ filter: { mailboxUid: f.users.aliceBox.uid, subject: { $in: ['FWD one', 'FWD two'] } } });
    expect(Object.fromEntries(filed.map((m) => [m.subject, m.senderVerified]))).toEqual({ 'FWD one': false, 'FWD two': true });
  });
});
