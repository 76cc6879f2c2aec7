import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, OutboundHandoffModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, message, INGEST_SECRET, type IngestFixture } from './setup.js';

const backends = await storeBackends();

describe.each(backends)('/internal/mta hand-off ($name)', (backend) => {
  let f: IngestFixture;
  const entries = () => f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
  beforeAll(async () => {
    f = await ingestFixture(backend, { 'mail:ingest:max_message_bytes': 64 * 1024, 'mail:internal:max_failures': 3 });
  });
  afterAll(async () => f?.close());

  it('accepts a message, answers a result per recipient, and queues one entry per mailbox', async () => {
    const r = await f.deliver({ to: ['alice@example.test', 'bob@example.test', 'nobody@example.test'], raw: message() });
    expect(r.status).toBe(202);
    expect(r.body.results).toEqual([
      { recipient: 'alice@example.test', status: 'queued', mailboxes: 1 },
      { recipient: 'bob@example.test', status: 'queued', mailboxes: 1 },
      { recipient: 'nobody@example.test', status: 'unknown', reason: 'no such recipient' },
    ]);
    const rows = await entries().list({ filter: { transactionId: r.body.transactionId } });
    expect(rows.map((e) => e.mailboxUid).sort()).toEqual([f.users.aliceBox.uid, f.users.bobBox.uid].sort());
    expect(new Set(rows.map((e) => e.rawRef)).size).toBe(1); // raw stored once, shared
    expect(rows.every((e) => e.state === 'queued')).toBe(true);
  });

  it('a retried hand-off of the same transaction creates no duplicate (MTA id and derived id)', async () => {
    const raw = message({ subject: 'retry me' });
    const a = await f.deliver({ to: ['alice@example.test'], raw, tx: 'ABC123QUEUE' });
    const b = await f.deliver({ to: ['alice@example.test'], raw, tx: 'ABC123QUEUE' });
    expect([a.status, b.status]).toEqual([202, 202]);
    expect(b.body.results[0].status).toBe('duplicate');
    expect(await entries().count({ transactionId: 'mta:ABC123QUEUE' })).toBe(1);
    const raw2 = message({ subject: 'no queue id' });
    const c = await f.deliver({ to: ['bob@example.test'], raw: raw2 });
    const d = await f.deliver({ to: ['bob@example.test'], raw: raw2 });
    expect(c.body.transactionId).toBe(d.body.transactionId);
    expect(await entries().count({ transactionId: c.body.transactionId })).toBe(1);
  });

  it('a plus address, an alias through a domain alias, and the same mailbox twice give one entry each', async () => {
    const admin = f.users.admin;
    const d = await f.api.call('POST', '/api/mail/domains', { token: admin, body: { name: 'alias.test', verified: true } });
    expect(d.status).toBe(201);
    const dom = await f.api.call('GET', '/api/mail/domains?name=example.test', { token: admin });
    const put = await f.api.call('PUT', `/api/mail/domains/${dom.body[0].uid}`, {
      token: admin,
      body: { version: dom.body[0].version, aliases: ['other.test'] },
    });
    expect(put.status).toBe(200);
    const r = await f.deliver({ to: ['alice+news@example.test', 'ALICE@other.test'], raw: message() });
    expect(r.status).toBe(202);
    expect(r.body.results.map((x: { status: string }) => x.status)).toEqual(['queued', 'queued']);
    const rows = await entries().list({ filter: { transactionId: r.body.transactionId } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ mailboxUid: f.users.aliceBox.uid, tag: 'news' });
  });

  it('distribution lists expand recursively, cut cycles, and relay external members at once', async () => {
    const admin = f.users.admin;
    const mk = async (address: string, members: string[]) => {
      const r = await f.api.call('POST', '/api/mail/distribution-lists', { token: admin, body: { address, members } });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      return r.body;
    };
    await mk('team-a@example.test', ['team-b@example.test', 'alice@example.test', 'partner@elsewhere.example']);
    await mk('team-b@example.test', ['team-a@example.test', 'bob@example.test']);
    const r = await f.deliver({ to: ['team-a@example.test'], raw: message({ subject: 'to the team' }) });
    expect(r.status).toBe(202);
    expect(r.body.results).toEqual([{ recipient: 'team-a@example.test', status: 'queued', mailboxes: 2 }]);
    const rows = await entries().list({ filter: { transactionId: r.body.transactionId } });
    expect(rows.map((e) => e.mailboxUid).sort()).toEqual([f.users.aliceBox.uid, f.users.bobBox.uid].sort());
    expect(rows.every((e) => e.viaList === 'team-a@example.test')).toBe(true);
    const relays = await f.api.deps.store
      .repo<{ kind: string; envelopeTo: string[] }>(OutboundHandoffModel)
      .list({ filter: { kind: 'list-relay' } });
    expect(relays.map((x) => x.envelopeTo)).toEqual([['partner@elsewhere.example']]);
  });

  it('members-only lists drop everything while no authserv-id is trusted', async () => {
    const r0 = await f.api.call('POST', '/api/mail/distribution-lists', {
      token: f.users.admin,
      body: { address: 'closed@example.test', members: ['alice@example.test'], membersOnly: true },
    });
    expect(r0.status).toBe(201);
    const r = await f.deliver({ from: 'alice@example.test', to: ['closed@example.test'], raw: message({ from: 'alice@example.test' }) });
    expect(r.body.results).toEqual([{ recipient: 'closed@example.test', status: 'rejected', reason: 'members-only list' }]);
    expect(await entries().count({ transactionId: r.body.transactionId })).toBe(0);
  });

  it('an unknown recipient from a local sender gives the sender a non-delivery report', async () => {
    const r = await f.deliver({
      from: 'bob@example.test',
      to: ['ghost@example.test'],
      raw: message({ from: 'bob@example.test', subject: 'lost' }),
    });
    expect(r.status).toBe(202);
    expect(r.body.results[0].status).toBe('unknown');
    const rows = await entries().list({ filter: { transactionId: r.body.transactionId } });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ mailboxUid: f.users.bobBox.uid, envelopeFrom: '' });
  });

  it('admin ingest-queue: needs a trusted role with fresh elevation; list, retry a failed entry, delete', async () => {
    const plain = await f.api.token({ uid: 'root', roles: ['admin'] });
    const stale = await f.api.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    expect((await f.api.call('GET', '/api/mail/ingest-queue', { token: plain })).body.code).toBe('api-104');
    expect((await f.api.call('GET', '/api/mail/ingest-queue', { token: stale })).body.code).toBe('api-104');
    expect((await f.api.call('GET', '/api/mail/ingest-queue', { token: f.users.alice })).status).toBe(403);
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: 'will fail' }) });
    const [e] = await entries().list({ filter: { transactionId: r.body.transactionId } });
    await entries().update(e.uid, { state: 'failed', attempts: 5, lastError: 'boom' });
    const list = await f.api.call('GET', '/api/mail/ingest-queue?state=failed', { token: f.users.admin });
    expect(list.status).toBe(200);
    expect(list.body.map((x: { uid: string }) => x.uid)).toContain(e.uid);
    expect(list.body[0].claimedBy).toBeUndefined();
    expect((await f.api.call('POST', `/api/mail/ingest-queue/${e.uid}/retry`, { token: stale })).status).toBe(403);
    const retry = await f.api.call('POST', `/api/mail/ingest-queue/${e.uid}/retry`, { token: f.users.admin });
    expect(retry.status).toBe(200);
    expect(await entries().get(e.uid)).toMatchObject({ state: 'queued', attempts: 0, lastError: null });
    const cur = (await entries().get(e.uid))!;
    expect(
      (await f.api.call('DELETE', `/api/mail/ingest-queue/${e.uid}`, { token: f.users.admin, body: { version: cur.version } })).status,
    ).toBe(204);
    expect(await entries().get(e.uid)).toBeNull();
  });

  it('domain and resolve lookups: served 200, unknown recipient 404, unknown domain 403', async () => {
    const get = (path: string, headers: Record<string, string> = {}) =>
      fetch(`${f.api.url}${path}`, { headers: { authorization: `Bearer ${INGEST_SECRET}`, ...headers } });
    expect((await get('/internal/mta/domain?name=example.test')).status).toBe(200);
    expect((await get('/internal/mta/domain?name=other.test')).status).toBe(200);
    const unknownDomain = await get('/internal/mta/domain?name=nowhere.example');
    expect(unknownDomain.status).toBe(403);
    expect(((await unknownDomain.json()) as { code: string }).code).toBe('api-119');
    expect((await get('/internal/mta/resolve?rcpt=alice%40example.test')).status).toBe(200);
    expect(await (await get('/internal/mta/resolve?rcpt=team-a%40example.test')).json()).toMatchObject({ kind: 'list' });
    expect((await get('/internal/mta/resolve?rcpt=ghost%40example.test')).status).toBe(404);
    expect((await get('/internal/mta/resolve?rcpt=a%40nowhere.example')).status).toBe(403);
    const r = await f.deliver({ to: ['someone@nowhere.example'], raw: message() });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe('api-119');
  });

  it('refuses a message over the size limit with 413 and a clear answer, storing nothing', async () => {
    const before = await entries().count();
    const r = await f.deliver({ to: ['alice@example.test'], raw: message({ body: 'x'.repeat(70 * 1024) }) });
    expect(r.status).toBe(413);
    expect(r.body).toMatchObject({ code: 'api-110' });
    expect(r.body.message).toMatch(/mail:ingest:max_message_bytes/);
    expect(await entries().count()).toBe(before);
  });

  it('any proxy header answers 403 (never 404), even with the right secret', async () => {
    for (const h of ['x-forwarded-for', 'forwarded', 'x-real-ip']) {
      const r = await f.deliver({ to: ['alice@example.test'], raw: message(), headers: { [h]: '203.0.113.9' } });
      expect(r.status, h).toBe(403);
    }
    const res = await fetch(`${f.api.url}/internal/mta/nope`, { headers: { authorization: 'Bearer wrong' } });
    expect(res.status).toBe(403);
  });

  it('wrong secrets from one address are throttled with 429, and the right one is then refused too', async () => {
    const before = await entries().count();
    // From an address of its own (the counters are per address): earlier tests' wrong secrets from
    // 127.0.0.1 do not count here, so exactly max_failures (3) wrong secrets are answered 403.
    const from = (secret: string) =>
      new Promise<number>((resolve, reject) => {
        const u = new URL(`${f.api.url}/internal/mta/deliver`);
        const req = httpRequest(
          {
            host: u.hostname,
            port: u.port,
            path: u.pathname,
            method: 'POST',
            localAddress: '127.0.0.73',
            headers: {
              authorization: `Bearer ${secret}`,
              'content-type': 'message/rfc822',
              'x-envelope-from': 'sender%40remote.example',
              'x-envelope-to': 'alice%40example.test',
            },
          },
          (res) => {
            res.resume();
            res.on('end', () => resolve(res.statusCode ?? 0));
          },
        );
        req.on('error', reject);
        req.end(message());
      });
    const codes: number[] = [];
    for (let i = 0; i < 5; i++) codes.push(await from(`wrong-${i}`));
    expect(codes).toEqual([403, 403, 403, 429, 429]);
    expect(await from(INGEST_SECRET)).toBe(429);
    // Another address is not affected.
    expect((await f.deliver({ to: ['alice@example.test'], raw: message() })).status).toBe(202);
    expect(await entries().count()).toBe(before + 1);
  });
});
