// Erasure of a mailbox over real HTTP on SQLite and PostgreSQL: only an administrator with fresh
// elevation asks (audited); an open escrow matter holds it; afterwards no table holds a row that
// names the mailbox, no blob file only it referenced is left on disk, a blob shared with another
// mailbox survives, and the address stays reserved by its tombstone until released.
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { MatterModel } from '../../../lib/escrow/index.js';
import { exportPath, uploadPath } from '../../../lib/lifecycle/index.js';
import { blobsOf, ErasedAddressModel } from '../../../lib/mail/index.js';
import { KeyDirectoryModel, KeyVaultModel } from '../../../lib/keys/index.js';
import { IssuedCertificateModel } from '../../../lib/pki/index.js';
import { BlobModel, sweepReleasedBlobs } from '../../../lib/storage/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';
import { ingestFixture, type IngestFixture } from '../ingest/setup.js';
import { download, drain, sha, upload } from './helpers.js';

const backends = await sqlBackends();
const crlf = (s: string) => Buffer.from(s.replace(/\r?\n/g, '\r\n'));
const ONLY_ALICE = 'From: x@example.net\nTo: alice@example.test\nSubject: only alice\nMessage-ID: <only@example.net>\n\nonly hers\n';
const SHARED = 'From: x@example.net\nTo: alice@example.test, bob@example.test\nSubject: both\nMessage-ID: <both@example.net>\n\nfor both\n';
const QUEUED = 'From: y@example.net\nTo: alice@example.test\nSubject: still queued\nMessage-ID: <queued@example.net>\n\nnot scanned yet\n';

function blobFiles(dataDir: string): Set<string> {
  const root = join(dataDir, 'blobs');
  if (!existsSync(root)) return new Set();
  return new Set(
    readdirSync(root, { recursive: true, withFileTypes: true })
      .filter((d) => d.isFile())
      .map((d) => d.name),
  );
}

describe.each(backends)('erasure on $name', (backend) => {
  let fx: IngestFixture;
  let p: IngestFixture['users'];
  let M: string;
  let requestUid: string;
  let exportUid: string;
  let importUid: string;
  let bobMessage: string;
  let matterUid: string;
  const api = () => fx.api;

  beforeAll(async () => {
    fx = await ingestFixture(backend);
    p = fx.users;
    M = p.aliceBox.uid;
    const a = p.alice;
    const store = api().deps.store;
    const folder = (await api().call('POST', '/api/mail/folders', { token: a, body: { mailboxUid: M, name: 'Private' } })).body;
    const label = (await api().call('POST', '/api/mail/labels', { token: a, body: { mailboxUid: M, name: 'Mine' } })).body;
    await deliverRaw(api(), M, ONLY_ALICE, { folderUid: folder.uid, labels: [label.uid] });
    await deliverRaw(api(), M, SHARED);
    bobMessage = (await deliverRaw(api(), p.bobBox.uid, SHARED)).uid;
    expect((await fx.deliver({ to: ['alice@example.test'], raw: QUEUED })).status).toBe(202); // an ingest entry holding its own raw blob
    const make = async (path: string, body: Record<string, unknown>) => {
      const r = await api().call('POST', path, { token: a, body: { mailboxUid: M, ...body } });
      expect(r.status, `${path} ${JSON.stringify(r.body)}`).toBe(201);
      return r.body;
    };
    await make('/api/mail/mail-filter-rules', { name: 'r', actions: [{ type: 'markRead' }] });
    await make('/api/mail/mail-signatures', { name: 'sig', text: 'Alice' });
    await make('/api/mail/calendar-events', { summary: 'Dentist', start: '2026-12-01T10:00:00Z', end: '2026-12-01T11:00:00Z' });
    await make('/api/mail/contacts', { fn: 'Friend' });
    await make('/api/mail/notes', { title: 'diary' });
    const list = await make('/api/mail/task-lists', { name: 'todo' });
    await make('/api/mail/tasks', { taskListUid: list.uid, title: 'call mum' });
    await api().call('POST', '/api/acls', {
      token: a,
      body: { resource: 'mailboxes', resourceUid: M, subject: 'user:carol', rights: ['read'] },
    });
    await api().call('POST', '/api/mail/distribution-lists', {
      token: p.admin,
      body: { address: 'team@example.test', members: ['alice@example.test', 'bob@example.test'] },
    });
    await store
      .repo(KeyVaultModel)
      .create({ mailboxUid: M, enrolled: true, masterKeyGeneration: 1, wraps: [{ method: 'password', wrapped: 'opaque' }] } as never);
    await store.repo(KeyDirectoryModel).create({ hash: 'abc', domain: 'example.test', mailboxUid: M } as never);
    await store.repo(IssuedCertificateModel).create({
      serial: '01',
      mailboxUid: M,
      backend: 'local',
      kind: 'encryption',
      fingerprint: 'f'.repeat(64),
      notAfter: new Date(Date.now() + 86_400_000),
      revokedAt: null,
      revocationReason: null,
    } as never);
    matterUid = (
      await store.repo(MatterModel).create({
        name: 'Case 1',
        description: '',
        scopeUid: 'scope-x',
        custodians: [M, p.bobBox.uid],
        from: new Date(0),
        to: new Date(),
        state: 'open',
      } as never)
    ).uid;
    await api().call('POST', '/api/admin/impersonation-sessions', { token: p.admin, body: { mailboxUid: M, reason: 'support ticket' } });
    exportUid = (await make('/api/mail/data-export-requests', {})).uid;
    await drain(api());
    importUid = (await upload(api(), a, { mailboxUid: M }, crlf(ONLY_ALICE.replace('only@', 'other@')), 'message/rfc822')).body.uid;
    expect(existsSync(exportPath(api().config, exportUid))).toBe(true);
    expect(existsSync(uploadPath(api().config, importUid))).toBe(true);
  }, 120_000);
  afterAll(async () => fx?.close());

  it('needs a trusted role with fresh elevation, and refuses a mailbox on hold', async () => {
    const body = { mailboxUid: M, reason: 'account closed, GDPR art. 17' };
    expect((await api().call('POST', '/api/mail/erasure-requests', { token: p.alice, body })).body.code).toBe('api-103');
    const notElevated = await api().token({ uid: 'root', roles: ['admin'] });
    const stale = await api().token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    for (const t of [notElevated, stale]) {
      expect((await api().call('POST', '/api/mail/erasure-requests', { token: t, body })).body).toMatchObject({
        status: 403,
        code: 'api-104',
      });
      expect((await api().call('GET', '/api/mail/erasure-requests', { token: t })).body.code).toBe('api-104');
    }
    expect((await api().call('POST', '/api/mail/erasure-requests', { token: p.admin, body: { ...body, mailboxUid: 'nope' } })).status).toBe(
      404,
    );
    const held = await api().call('POST', '/api/mail/erasure-requests', { token: p.admin, body });
    expect(held).toMatchObject({ status: 409, body: { code: 'api-120', message: expect.stringContaining(matterUid) } });
    await api()
      .deps.store.repo(MatterModel)
      .update(matterUid, { state: 'closed' } as never);
    const r = await api().call('POST', '/api/mail/erasure-requests', { token: p.admin, body });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ state: 'pending', address: 'alice@example.test', requestedBy: 'root', reason: body.reason });
    requestUid = r.body.uid;
    expect((await api().call('POST', '/api/mail/erasure-requests', { token: p.admin, body })).body.code).toBe('api-112');
    const audit = await api()
      .deps.store.repo(AuditEntryModel)
      .list({ filter: { action: 'erasure-requests.create', resourceUid: requestUid } });
    expect(audit).toEqual([expect.objectContaining({ actor: 'root' })]);
  });

  it('the job leaves no row naming the mailbox and no blob only it referenced', async () => {
    const before = blobFiles(fx.dataDir);
    for (const raw of [ONLY_ALICE, SHARED, QUEUED]) expect(before.has(sha(crlf(raw))) || before.has(sha(raw))).toBe(true);
    const round = await drain(api());
    expect(round).toMatchObject({ erasures: 1, failed: 0 });
    const rec = (await api().call('GET', `/api/mail/erasure-requests/${requestUid}`, { token: p.admin })).body;
    expect(rec).toMatchObject({ state: 'completed', error: null });
    expect(rec.deleted).toMatchObject({
      messages: 2,
      mailboxes: 1,
      folders: 8,
      labels: 1,
      calendar_events: 1,
      contacts: 1,
      notes: 1,
      tasks: 1,
      task_lists: 1,
      key_vaults: 1,
      key_directory: 1,
      ingest_entries: 1,
      data_export_requests: 1,
    });
    expect(rec.blobFilesRemoved).toBe(2);

    const store = api().deps.store;
    const leaks: string[] = [];
    for (const model of productModels(productRegistry())) {
      if (['audit_entries', 'erasure_requests'].includes(model.table)) continue; // the record of the erasure itself
      const rows = await store.repo<Record<string, unknown>>(model).list({ limit: 10_000 });
      for (const row of rows) {
        const text = JSON.stringify(row);
        if (text.includes(M)) leaks.push(`${model.table}: ${text.slice(0, 200)}`);
        if (
          ['mailboxes', 'mail_addresses', 'distribution_lists', 'key_directory', 'acl_entries'].includes(model.table) &&
          text.includes('alice@example.test')
        )
          leaks.push(`${model.table} keeps the address`);
      }
    }
    expect(leaks).toEqual([]);
    const matter = await store.repo<{ custodians: string[] }>(MatterModel).get(matterUid);
    expect(matter!.custodians).toEqual([`erased:${requestUid}`, p.bobBox.uid]);

    const after = blobFiles(fx.dataDir);
    expect(after.has(sha(crlf(ONLY_ALICE)))).toBe(false);
    expect(after.has(sha(QUEUED)) || after.has(sha(crlf(QUEUED)))).toBe(false);
    expect(after.has(sha(crlf(SHARED)))).toBe(true);
    // Released files wait out the sweep's grace period (a racing hand-off of the same bytes gets them back), then go.
    const swept = await sweepReleasedBlobs(store, blobsOf(api().deps), { graceMs: 0 });
    expect(swept).toMatchObject({ deleted: 2, restored: 0 });
    const gone = [...blobFiles(fx.dataDir)].filter((n) =>
      [sha(crlf(ONLY_ALICE)), sha(QUEUED), sha(crlf(QUEUED))].some((id) => n.startsWith(id)),
    );
    expect(gone).toEqual([]);
    expect((await store.repo<{ refs: number }>(BlobModel).get(sha(crlf(SHARED))))!.refs).toBe(1);
    expect(sha((await download(api(), p.bob, `/api/mail/messages/${bobMessage}/raw`)).buf)).toBe(sha(crlf(SHARED)));
    expect(existsSync(exportPath(api().config, exportUid))).toBe(false);
    expect(existsSync(uploadPath(api().config, importUid))).toBe(false);
    expect((await api().call('GET', `/api/mail/folders?mailboxUid=${M}`, { token: p.alice })).status).toBe(404);
    const done = await store.repo(AuditEntryModel).list({ filter: { action: 'erasure-requests.completed', resourceUid: requestUid } });
    expect(done).toHaveLength(1);
  });

  it('keeps the address reserved by a tombstone until an elevated administrator releases it', async () => {
    const tomb = await api().deps.store.repo<{ address: string; erasedBy: string; requestUid: string }>(ErasedAddressModel).list({});
    expect(tomb).toEqual([expect.objectContaining({ address: 'alice@example.test', erasedBy: 'root', requestUid })]);
    const again = await api().call('POST', '/api/mail/mailboxes', {
      token: p.admin,
      body: { address: 'alice@example.test', owners: ['alice2'] },
    });
    expect(again).toMatchObject({ status: 409, body: { code: 'api-112', message: expect.stringContaining('release-addresses') } });
    const alias = await api().call('PUT', `/api/mail/mailboxes/${p.bobBox.uid}?scope=admin`, {
      token: p.admin,
      body: {
        aliases: ['alice@example.test'],
        version: (await api().call('GET', `/api/mail/mailboxes/${p.bobBox.uid}?scope=admin`, { token: p.admin })).body.version,
      },
    });
    expect(alias.body.code).toBe('api-112');
    const stale = await api().token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    expect((await api().call('POST', `/api/mail/erasure-requests/${requestUid}/release-addresses`, { token: stale })).body.code).toBe(
      'api-104',
    );
    expect((await api().call('POST', `/api/mail/erasure-requests/${requestUid}/release-addresses`, { token: p.admin })).body).toEqual({
      released: ['alice@example.test'],
    });
    expect(await api().deps.store.repo(ErasedAddressModel).count()).toBe(0);
    expect(
      (await api().call('POST', '/api/mail/mailboxes', { token: p.admin, body: { address: 'alice@example.test', owners: ['alice2'] } }))
        .status,
    ).toBe(201);
  });

  it('withdraws only a pending request', async () => {
    const done = (await api().call('GET', `/api/mail/erasure-requests/${requestUid}`, { token: p.admin })).body;
    expect(
      (await api().call('DELETE', `/api/mail/erasure-requests/${requestUid}`, { token: p.admin, body: { version: done.version } })).body
        .code,
    ).toBe('api-120');
    const r = (
      await api().call('POST', '/api/mail/erasure-requests', { token: p.admin, body: { mailboxUid: p.bobBox.uid, reason: 'mistake' } })
    ).body;
    expect(
      (await api().call('DELETE', `/api/mail/erasure-requests/${r.uid}`, { token: p.admin, body: { version: r.version } })).status,
    ).toBe(204);
    expect((await drain(api())).erasures).toBe(0);
    expect((await api().call('GET', `/api/mail/messages/${bobMessage}`, { token: p.bob })).status).toBe(200);
  });
});
