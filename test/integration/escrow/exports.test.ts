// Spec: /api/escrow/ matter-export-requests. A holder asks for an export under an approved access
// request; the worker job builds messages.mbox + manifest.json; holders download while the release
// checks hold; exports expire (TTL, matter closed) and failed builds give up after
// export_max_attempts.
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ApprovalModel,
  EscrowAuditModel,
  exportFile,
  MatterExportModel,
  type EscrowAuditEntry,
  type ManifestMessage,
  type MatterExport,
} from '../../../lib/escrow/index.js';
import { drainEscrowExports, startEscrowExportLoop } from '../../../lib/jobs/escrow-export.js';
import { blobsOf } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';
import { requirePrograms } from '../../helpers/peers.js';
import { keyTestValues } from '../keys/helpers.js';
import { mboxrdQuote, mboxrdUnquote } from '../../../lib/mail/index.js';
import { scopeKeyPair } from './scope-key.js';

const backends = await sqlBackends();
const withOpenssl = requirePrograms('openssl');
const scopeCert = () => scopeKeyPair().certPem;

const mail = (subject: string, date: Date, body: string) =>
  `From: carol@example.net\r\nTo: alice@example.test\r\nSubject: ${subject}\r\nDate: ${date.toUTCString()}\r\nMessage-ID: <${subject.replace(/\W/g, '')}@example.net>\r\n\r\n${body}`;

describe.runIf(withOpenssl).each(backends)('escrow matter exports on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let h1: string;
  let h2: string;
  let scopeUid: string;
  const day = 86_400_000;
  const exports = () => api.deps.store.repo<MatterExport>(MatterExportModel);
  const audit = async (action: string) =>
    await api.deps.store
      .repo<EscrowAuditEntry>(EscrowAuditModel)
      .list({ filter: { action }, sort: [{ field: 'seq', dir: 'asc' }], limit: 1000 });
  const download = (uid: string, token: string, part = 'download') =>
    fetch(`${api.url}/api/escrow/matter-export-requests/${uid}/${part}`, { headers: { authorization: `Bearer ${token}` } });

  /** A matter over alice's mailbox and an access request with `approvals` of M=2. */
  async function matterWithRequest(approvals: 1 | 2): Promise<{ matterUid: string; requestUid: string }> {
    const m = await api.call('POST', '/api/escrow/matters', {
      token: h1,
      body: {
        name: 'Case',
        scopeUid,
        custodians: [p.aliceBox.uid],
        from: new Date(Date.now() - day).toISOString(),
        to: new Date(Date.now() + day).toISOString(),
      },
    });
    const r = await api.call('POST', '/api/escrow/access-requests', { token: h1, body: { matterUid: m.body.uid, reason: 'court order' } });
    if (approvals === 2)
      expect((await api.call('POST', `/api/escrow/access-requests/${r.body.uid}/approve`, { token: h2 })).body.state).toBe('approved');
    return { matterUid: m.body.uid, requestUid: r.body.uid };
  }

  beforeAll(async () => {
    api = await startTestApi(
      backend,
      await keyTestValues({
        data_dir: mkdtempSync(join(tmpdir(), 'svcmail-escrow-')),
        'mail:escrow:export_max_attempts': 2,
        'mail:jobs:escrow_export:interval_seconds': 0.01,
      }),
    );
    p = await seedUsers(api);
    [h1, h2] = await Promise.all(['h1', 'h2'].map((uid) => api.token({ uid, roles: ['admin'], elevated: true })));
    scopeUid = (
      await api.call('POST', '/api/escrow/scopes', {
        token: h1,
        body: { name: 'Legal', certificatePem: scopeCert(), holders: ['h1', 'h2'], approvalsRequired: 2 },
      })
    ).body.uid;
    expect(
      (await api.call('POST', `/api/escrow/scopes/${scopeUid}/mailboxes`, { token: h1, body: { mailboxUid: p.aliceBox.uid } })).status,
    ).toBe(201);
  }, 60_000);
  afterAll(async () => api?.close());

  it('needs an access request with M valid approvals, and a holder', async () => {
    const { requestUid } = await matterWithRequest(1);
    const few = await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } });
    expect(few.status).toBe(403);
    expect(few.body.code).toBe('api-102');
    expect((await audit('export.refused')).at(-1)).toMatchObject({ actor: 'h1', scopeUid, details: { requestUid } });
    expect(
      (await api.call('POST', '/api/escrow/matter-export-requests', { token: p.admin, body: { accessRequestUid: requestUid } })).status,
    ).toBe(404);
    expect(
      (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid, extra: 1 } }))
        .status,
    ).toBe(400);
    expect(await exports().count()).toBe(0);
  });

  it("builds an mbox of the custodians' raw messages in the date range and a manifest; holders download, audited", async () => {
    const inRange = mail('quarterly numbers', new Date(), 'Hello\r\nFrom the desk of the CEO\r\n>From quoted already\r\n');
    const msg = await deliverRaw(api, p.aliceBox.uid, Buffer.from(inRange));
    await deliverRaw(api, p.aliceBox.uid, Buffer.from(mail('ancient', new Date(Date.now() - 30 * day), 'old\r\n')));
    await deliverRaw(api, p.bobBox.uid, Buffer.from(mail('not a custodian', new Date(), 'bob\r\n')));
    const { requestUid, matterUid } = await matterWithRequest(2);
    const created = await api.call('POST', '/api/escrow/matter-export-requests', { token: h2, body: { accessRequestUid: requestUid } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ state: 'pending', accessRequestUid: requestUid, matterUid, scopeUid, requester: 'h2' });
    expect(created.body.lastError).toBeUndefined();
    const uid = created.body.uid as string;
    const early = await download(uid, h1);
    expect(early.status).toBe(409);
    expect((await drainEscrowExports(api.deps, 'test-worker')).built).toBe(1);
    const rec = (await exports().get(uid))!;
    expect(rec).toMatchObject({ state: 'ready', messageCount: 1 });
    expect(new Date(rec.expiresAt!).getTime()).toBeGreaterThan(Date.now() + 71 * 3600_000);
    const mbox = Buffer.from(await (await download(uid, h1)).arrayBuffer());
    expect(createHash('sha256').update(mbox).digest('hex')).toBe(rec.mboxSha256);
    expect(mbox.equals(readFileSync(exportFile(api.config, uid, 'mbox')))).toBe(true);
    const manifestRes = await download(uid, h2, 'manifest');
    const manifestBytes = Buffer.from(await manifestRes.arrayBuffer());
    expect(createHash('sha256').update(manifestBytes).digest('hex')).toBe(rec.manifestSha256);
    const manifest = JSON.parse(manifestBytes.toString()) as {
      matterUid: string;
      custodians: string[];
      mbox: { sha256: string };
      messages: ManifestMessage[];
    };
    expect(manifest).toMatchObject({ matterUid, custodians: [p.aliceBox.uid], mbox: { sha256: rec.mboxSha256 } });
    expect(manifest.messages.map((m) => m.uid)).toEqual([msg.uid]);
    const [entry] = manifest.messages;
    expect(entry).toMatchObject({
      mailboxUid: p.aliceBox.uid,
      subject: 'quarterly numbers',
      fromAddress: 'carol@example.net',
      size: Buffer.byteLength(inRange),
    });
    const quoted = mbox.subarray(entry.offset, entry.offset + entry.length);
    expect(quoted.toString()).toContain('\r\n>From the desk of the CEO');
    expect(quoted.toString()).toContain('\r\n>>From quoted already');
    expect(mboxrdUnquote(quoted).toString()).toBe(inRange);
    expect(createHash('sha256').update(mboxrdUnquote(quoted)).digest('hex')).toBe(entry.sha256);
    expect(mbox.subarray(0, 5).toString()).toBe('From ');
    // Holders only, as anywhere in escrow.
    expect((await download(uid, p.admin)).status).toBe(404);
    expect((await api.call('GET', `/api/escrow/matter-export-requests/${uid}`, { token: p.admin })).status).toBe(404);
    expect((await api.call('GET', '/api/escrow/matter-export-requests', { token: p.admin })).body).toEqual([]);
    expect((await api.call('GET', '/api/escrow/matter-export-requests', { token: h1 })).body.map((e: { uid: string }) => e.uid)).toEqual([
      uid,
    ]);
    expect((await audit('export.download')).map((e) => [e.actor, e.details.part])).toEqual([
      ['h1', 'mbox'],
      ['h2', 'manifest'],
    ]);
    expect((await audit('export.ready')).map((e) => e.actor)).toEqual(['svcmail-worker']);
    expect((await audit('access.denied')).at(-1)).toMatchObject({ actor: 'root', details: { attempted: 'export.download' } });

    // Every download re-checks the approvals: an aged one stops it.
    const approvals = api.deps.store.repo<{ holder: string; approvedAt: Date }>(ApprovalModel);
    const h2Approval = (await approvals.list({ filter: { requestUid, holder: 'h2' } }))[0];
    await approvals.update(h2Approval.uid, { approvedAt: new Date(Date.now() - 73 * 3600_000) });
    expect((await download(uid, h1)).status).toBe(403);
    await approvals.update(h2Approval.uid, { approvedAt: new Date() });
    expect((await download(uid, h1)).status).toBe(200);

    // Past export_ttl_hours: refused at once, deleted by the next round.
    await exports().update(uid, { expiresAt: new Date(Date.now() - 1000) });
    expect((await download(uid, h1)).status).toBe(409);
    expect((await drainEscrowExports(api.deps, 'test-worker')).expired).toBe(1);
    expect((await exports().get(uid))!.state).toBe('expired');
    expect(existsSync(exportFile(api.config, uid, 'mbox'))).toBe(false);
    expect((await audit('export.expire')).at(-1)).toMatchObject({ details: { uid, reason: 'export_ttl_hours passed' } });
  });

  it('closing the matter expires its exports and deletes the files', async () => {
    const { requestUid, matterUid } = await matterWithRequest(2);
    const uid = (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } })).body
      .uid as string;
    const pendingUid = (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } }))
      .body.uid as string;
    await exports().update(pendingUid, { nextAttemptAt: new Date(Date.now() + 3600_000) }); // not built yet when the matter closes
    await drainEscrowExports(api.deps, 'test-worker');
    expect(existsSync(exportFile(api.config, uid, 'manifest'))).toBe(true);
    expect((await api.call('POST', `/api/escrow/matters/${matterUid}/close`, { token: h2 })).body.state).toBe('closed');
    expect((await exports().get(uid))!.state).toBe('expired');
    expect((await exports().get(pendingUid))!.state).toBe('expired');
    expect(existsSync(exportFile(api.config, uid, 'manifest'))).toBe(false);
    const r = await download(uid, h1);
    expect(r.status).toBe(409);
    expect((await audit('matter.close')).at(-1)!.details.expiredExports).toEqual(expect.arrayContaining([uid, pendingUid]));
    expect(
      (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } })).status,
    ).toBe(409);
  });

  it('a build that keeps failing is failed after export_max_attempts; the error text is not answered', async () => {
    const raw = Buffer.from(mail('blob goes missing', new Date(), 'x\r\n'));
    const msg = await deliverRaw(api, p.aliceBox.uid, raw);
    await blobsOf(api.deps).remove((msg as { blobId: string }).blobId);
    const { requestUid } = await matterWithRequest(2);
    const uid = (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } })).body
      .uid as string;
    for (let i = 0; i < 20 && (await exports().get(uid))!.state === 'pending'; i++) {
      await drainEscrowExports(api.deps, 'test-worker');
      await new Promise((r) => setTimeout(r, 30));
    }
    const rec = (await exports().get(uid))!;
    expect(rec).toMatchObject({ state: 'failed', attempts: 2 });
    expect(rec.lastError).toBeTruthy();
    const seen = await api.call('GET', `/api/escrow/matter-export-requests/${uid}`, { token: h1 });
    expect(seen.body.state).toBe('failed');
    expect(seen.body.lastError).toBeUndefined();
    expect(existsSync(exportFile(api.config, uid, 'mbox'))).toBe(false);
    expect((await audit('export.fail')).at(-1)).toMatchObject({ details: { uid, attempts: 2 } });
    await blobsOf(api.deps).put(raw); // back, for the next test
  });

  it('the worker loop builds an export when woken', async () => {
    await api.deps.store.repo(MatterExportModel).updateMany({ state: 'pending' }, { state: 'failed' });
    const { requestUid } = await matterWithRequest(2);
    const uid = (await api.call('POST', '/api/escrow/matter-export-requests', { token: h1, body: { accessRequestUid: requestUid } })).body
      .uid as string;
    const loop = startEscrowExportLoop(api.deps, 'loop-worker');
    try {
      for (let i = 0; i < 100 && (await exports().get(uid))!.state === 'pending'; i++) await new Promise((r) => setTimeout(r, 50));
    } finally {
      await loop.stop();
    }
    expect((await exports().get(uid))!.state).toBe('ready');
  });

  it('mboxrd quoting round-trips', () => {
    const raw = Buffer.from('From: a\r\n\r\nFrom here\r\n>From there\r\nnot From\r\n');
    expect(mboxrdQuote(raw).toString()).toBe('From: a\r\n\r\n>From here\r\n>>From there\r\nnot From\r\n');
    expect(mboxrdUnquote(mboxrdQuote(raw)).equals(raw)).toBe(true);
  });
});
