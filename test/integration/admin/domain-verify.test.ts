import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { startTestApi, type TestApi } from '../../helpers/api.js';
import { startDnsServer } from '../../helpers/dns-server.js';

// Spec: Internal mail hand-off (GET /internal/mta/domain) — only enabled, verified domains accept
// inbound mail. POST /api/admin/dns-checklist/verify checks the records live and verifies a domain
// whose MX points here; GET ?check=true reports the same verdicts without writing. A real DNS
// server on loopback.

const backends = await sqlBackends();
const INGEST = 'domain-verify-ingest-secret-01';

describe.each(backends)('verifying a domain by its DNS records ($name)', (backend) => {
  let api: TestApi;
  let dns: Awaited<ReturnType<typeof startDnsServer>>;
  let admin: string;
  const served = async (name: string) =>
    (await fetch(`${api.url}/internal/mta/domain?name=${name}`, { headers: { authorization: `Bearer ${INGEST}` } })).status;

  beforeAll(async () => {
    dns = await startDnsServer({});
    api = await startTestApi(backend, {
      'mail:dns:check_nameservers': [dns.address],
      'mail:host': 'mail.example.test',
      'mail:transport:ingest:secret': INGEST,
    });
    admin = await api.token({ uid: 'root', roles: ['admin'], elevated: true });
    expect((await api.call('POST', '/api/mail/domains', { token: admin, body: { name: 'new.test' } })).status).toBe(201);
  });
  afterAll(async () => {
    await api?.close();
    await dns?.close();
  });

  it('without its MX the domain stays unverified and the answer names the MX record to add', async () => {
    const r = await api.call('POST', '/api/admin/dns-checklist/verify', { token: admin, body: { domain: 'new.test' } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.domains).toEqual([expect.objectContaining({ domain: 'new.test', verified: false, changed: false })]);
    expect(r.body.domains[0].missing).toContainEqual(
      expect.objectContaining({ purpose: 'mx', status: 'missing', fix: 'add: new.test. 3600 IN MX 10 mail.example.test.' }),
    );
    expect(await served('new.test')).toBe(403);
  });

  it('GET ?check=true reports the verdict but writes nothing', async () => {
    // any preference: what counts is that the exchange is this server
    dns.zone['new.test'] = [{ type: 'MX', data: { preference: 20, exchange: 'mail.example.test' } }];
    const r = await api.call('GET', '/api/admin/dns-checklist?check=true', { token: admin });
    expect(r.body.domains).toEqual([expect.objectContaining({ domain: 'new.test', verified: true, changed: true })]);
    expect(await served('new.test')).toBe(403);
  });

  it('with its MX pointing here, verify marks it verified (audited, once) and its mail is accepted', async () => {
    const r = await api.call('POST', '/api/admin/dns-checklist/verify', { token: admin, body: {} });
    expect(r.body.domains).toEqual([expect.objectContaining({ domain: 'new.test', verified: true, changed: true })]);
    expect(await served('new.test')).toBe(200);
    const again = await api.call('POST', '/api/admin/dns-checklist/verify', { token: admin, body: { domain: 'new.test' } });
    expect(again.body.domains[0]).toMatchObject({ verified: true, changed: false });
    const audit = await api.deps.store
      .repo<{ action: string; actor: string }>(AuditEntryModel)
      .list({ filter: { action: 'domains.verify' } });
    expect(audit.map((a) => a.actor)).toEqual(['root']);
  });

  it('refuses callers without a trusted role, an unknown domain and a bad body', async () => {
    const alice = await api.token({ uid: 'alice' });
    expect((await api.call('POST', '/api/admin/dns-checklist/verify', { token: alice, body: {} })).body.code).toBe('api-103');
    expect((await api.call('POST', '/api/admin/dns-checklist/verify', { token: admin, body: { domain: 'nowhere.test' } })).status).toBe(
      404,
    );
    const bad = await api.call('POST', '/api/admin/dns-checklist/verify', { token: admin, body: { domain: 'x.test', force: true } });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('api-106');
  });
});
