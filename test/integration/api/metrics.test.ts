import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('GET /api/metrics on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('counts requests per route template after traffic, never per raw id', async () => {
    for (let i = 0; i < 3; i++) await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice });
    await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.bob });
    const r = await api.call('GET', '/api/metrics', { token: p.admin });
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toMatch(/^text\/plain/);
    const text = r.body as string;
    expect(text).toMatch(/svcmail_http_requests_total\{method="GET",route="\/api\/mail\/folders",status="200",daemon="api"\} 3/);
    expect(text).toMatch(/svcmail_http_requests_total\{method="GET",route="\/api\/mail\/mailboxes\/:id",status="404",daemon="api"\} 1/);
    expect(text).not.toContain(p.aliceBox.uid);
    expect(text).toMatch(/svcmail_ingest_entries\{state="queued",daemon="api"\} 0/);
    expect(text).toContain('svcmail_process_resident_memory_bytes');
  });

  it.each([
    ['no token', null, 401],
    ['a plain user', 'alice', 403],
    ['an admin without elevation', 'plainAdmin', 403],
  ])('refuses %s', async (_w, who, status) => {
    const token = who === 'alice' ? p.alice : who === 'plainAdmin' ? await api.token({ uid: 'root', roles: ['admin'] }) : null;
    const r = await api.call('GET', '/api/metrics', { token });
    expect(r.status).toBe(status);
    expect(String(r.body)).not.toContain('svcmail_http_requests_total');
  });
});
