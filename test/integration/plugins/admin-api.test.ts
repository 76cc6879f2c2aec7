// /api/system/plugins: listed and switched only with a trusted role and fresh elevation (Spec:
// Roles and elevation), audited, stored so every daemon agrees; a disabled plugin's routes 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AuditEntryModel, type AuditEntry } from '../../../lib/audit/index.js';
import { autodiscoverPlugin, PluginStateModel, type PluginState } from '../../../lib/plugins/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { request, seed, startStack, type Stack } from './_stack.js';
import { testEas } from './_plugins.js';

const backends = await sqlBackends();

describe.each(backends.map((b) => [b.name, b] as const))('/api/system/plugins on %s', (_name, backend) => {
  let stack: Stack;
  let s: Awaited<ReturnType<typeof seed>>;
  let stale: string;
  let notElevated: string;
  beforeAll(async () => {
    stack = await startStack(backend, {
      values: { 'mail:autodiscover:public_url': 'https://mail.example.test' },
      plugins: [autodiscoverPlugin, testEas],
    });
    s = await seed(stack);
    stale = await stack.token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3600_000) });
    notElevated = await stack.token({ uid: 'root', roles: ['admin'] });
  }, 60_000);
  afterAll(async () => stack?.close());

  it('lists every installed plugin with its state, routes, daemons, protocols and settings', async () => {
    const r = await stack.call('GET', '/api/system/plugins', s.admin);
    expect(r.status).toBe(200);
    expect(r.body.map((p: { name: string }) => p.name)).toEqual(['autodiscover', 'test-eas']);
    expect(r.body[0]).toMatchObject({
      name: 'autodiscover',
      version: '1.0.0',
      enabled: true,
      protocols: ['AutodiscoverV1'],
      settings: [{ name: 'mail:autodiscover:public_url', doc: expect.stringMatching(/https/) }],
    });
    expect(r.body[0].routes).toContainEqual({ method: 'POST', path: '/autodiscover/autodiscover.xml', daemon: 'protocols', auth: 'none' });
    expect(r.body[1]).toMatchObject({ name: 'test-eas', protocols: ['ActiveSync'] });
    expect((await stack.call('GET', '/api/system/plugins/autodiscover', s.admin)).body).toEqual(r.body[0]);
    expect(await stack.call('GET', '/api/system/plugins/nope', s.admin)).toMatchObject({ status: 404, body: { code: 'api-107' } });
    expect(await stack.call('GET', '/api/system/plugins/Not%20A%20Name', s.admin)).toMatchObject({
      status: 400,
      body: { code: 'api-106' },
    });
  });

  it.each([
    ['no token', null, 401, 'api-100'],
    ['a plain user', 'alice', 403, 'api-103'],
    ['an administrator without elevation', 'notElevated', 403, 'api-104'],
    ['an administrator with stale elevation', 'stale', 403, 'api-104'],
  ])('%s (%s) is refused with %i %s, to list and to switch, and nothing changes', async (_n, who, status, code) => {
    const token = who === null ? null : who === 'alice' ? s.alice : who === 'stale' ? stale : notElevated;
    expect(await stack.call('GET', '/api/system/plugins', token)).toMatchObject({ status, body: { code, status } });
    expect(await stack.call('PUT', '/api/system/plugins/test-eas', token, { enabled: false })).toMatchObject({ status, body: { code } });
    expect(await stack.deps.store.repo(PluginStateModel).count()).toBe(0);
    expect((await request(`${stack.protocols}/Vendor-Server-ActiveSync`, { method: 'OPTIONS' })).status).toBe(200);
  });

  it.each([
    ['no body', undefined],
    ['a string', { enabled: 'no' }],
    ['an unknown field', { enabled: false, force: true }],
  ])('validates the body: %s → 400 api-106', async (_n, body) => {
    expect(await stack.call('PUT', '/api/system/plugins/test-eas', s.admin, body)).toMatchObject({
      status: 400,
      body: { code: 'api-106' },
    });
  });

  it("disabling (fresh elevation) stores the state, audits it, and the plugin's routes answer 404 at once; enabling brings them back", async () => {
    const off = await stack.call('PUT', '/api/system/plugins/test-eas', s.admin, { enabled: false });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({ name: 'test-eas', enabled: false, changedBy: 'root' });
    const stored = await stack.deps.store.repo<PluginState>(PluginStateModel).findOne({ name: 'test-eas' });
    expect(stored).toMatchObject({ enabled: false, changedBy: 'root' });
    const options = await request(`${stack.protocols}/Vendor-Server-ActiveSync`, { method: 'OPTIONS' });
    expect(options.status).toBe(404);
    expect(options.json).toMatchObject({ code: 'api-107', status: 404 });
    // Through the api daemon's front door as well.
    expect((await request(`${stack.api}/Vendor-Server-ActiveSync`, { method: 'OPTIONS' })).status).toBe(404);

    const on = await stack.call('PUT', '/api/system/plugins/test-eas', s.admin, { enabled: true });
    expect(on.body).toMatchObject({ enabled: true });
    expect((await request(`${stack.protocols}/Vendor-Server-ActiveSync`, { method: 'OPTIONS' })).headers.get('ms-asprotocolversions')).toBe(
      '14.0,14.1,16.0,16.1',
    );
    const audit = await stack.deps.store
      .repo<AuditEntry>(AuditEntryModel)
      .list({ filter: { resource: 'plugins', resourceUid: 'test-eas' }, sort: [{ field: 'createdAt', dir: 'asc' }], limit: 10 });
    expect(audit.map((a) => [a.action, a.actor, a.before, a.after])).toEqual([
      ['plugins.disable', 'root', { enabled: true }, { enabled: false }],
      ['plugins.enable', 'root', { enabled: false }, { enabled: true }],
    ]);
  });
});
