import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DomainModel } from '../../../lib/settings/index.js';
import { FolderModel, type Folder } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

// The generic routes of the spec (Endpoints / Generic resource routes) on a global resource (domains)
// and a mailbox-scoped one (folders), over real HTTP on every SQL backend.
describe.each(backends)('generic resource routes on $name', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  const D = '/api/mail/domains';
  const F = '/api/mail/folders';
  const names = ['d1.test', 'd2.test', 'd3.test', 'd4.test', 'd5.test'];

  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api); // creates example.test
    for (const [i, name] of names.entries()) {
      const r = await api.call('POST', D, {
        token: people.admin,
        body: { name, enabled: i % 2 === 0, verified: i < 2, dkimSelector: `s${5 - i}` },
      });
      expect(r.status).toBe(201);
    }
  });
  afterAll(async () => api?.close());

  const domains = () => api.deps.store.repo<{ name: string; enabled: boolean; verified: boolean }>(DomainModel);
  const list = (query: string) => api.call('GET', `${D}${query}`, { token: people.admin });
  const namesOf = (body: Array<{ name: string }>) => body.map((d) => d.name);

  describe('list', () => {
    it.each([
      ['?sort=name', ['d1.test', 'd2.test', 'd3.test', 'd4.test', 'd5.test', 'example.test']],
      ['?sort=-name', ['example.test', 'd5.test', 'd4.test', 'd3.test', 'd2.test', 'd1.test']],
      ['?sort=-enabled,name', ['d1.test', 'd3.test', 'd5.test', 'example.test', 'd2.test', 'd4.test']],
      [`?sort=${encodeURIComponent('{"enabled":1,"name":-1}')}`, ['d4.test', 'd2.test', 'example.test', 'd5.test', 'd3.test', 'd1.test']],
      [`?sort=${encodeURIComponent('["-verified","-name"]')}`, ['example.test', 'd2.test', 'd1.test', 'd5.test', 'd4.test', 'd3.test']],
      ['?sort=name&limit=2', ['d1.test', 'd2.test']],
      ['?sort=name&limit=2&page=0', ['d1.test', 'd2.test']],
      ['?sort=name&limit=2&page=2', ['d5.test', 'example.test']],
      ['?sort=name&limit=2&page=3', []],
      ['?sort=name&enabled=false', ['d2.test', 'd4.test']],
      ['?sort=name&verified=true&enabled=true', ['d1.test', 'example.test']],
      ['?sort=name&name=d3.test', ['d3.test']],
      ['?sort=name&name=d3.test&name=d5.test&name=nowhere.test', ['d3.test', 'd5.test']],
      ['?sort=dkimSelector&dkimSelector=s1&dkimSelector=s2', ['d5.test', 'd4.test']],
    ])('GET %s', async (query, expected) => {
      const r = await list(query);
      expect(r.status).toBe(200);
      expect(namesOf(r.body)).toEqual(expected);
    });

    it('answers every field of the record with uid and version', async () => {
      const r = await list('?name=d1.test');
      expect(r.body).toHaveLength(1);
      expect(r.body[0]).toMatchObject({ name: 'd1.test', enabled: true, verified: true, aliases: [], dkimSelector: 's5', version: 1 });
      expect(typeof r.body[0].uid).toBe('string');
      // dates as the ISO text of the stored instants, the same in the list as in GET /:id
      const stored = (await domains().get(r.body[0].uid))!;
      expect(r.body[0].createdAt).toBe((stored as unknown as { createdAt: Date }).createdAt.toISOString());
      expect(r.body[0].updatedAt).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
      expect((await api.call('GET', `${D}/${r.body[0].uid}`, { token: people.admin })).body).toEqual(r.body[0]);
    });

    it('limit defaults to 100 and accepts 1000', async () => {
      const mailbox = people.aliceBox.uid;
      // 7 system folders + 100 more = 107 rows; the default page holds 100.
      const repo = api.deps.store.repo<Folder>(FolderModel);
      for (let i = 0; i < 100; i++)
        await repo.create({
          mailboxUid: mailbox,
          parentUid: null,
          name: `bulk-${String(i).padStart(3, '0')}`,
          role: null,
          unreadCount: 0,
          totalCount: 0,
          threadsReady: true,
        });
      const r = await api.call('GET', `${F}?mailboxUid=${mailbox}`, { token: people.alice });
      expect(r.status).toBe(200);
      expect(r.body).toHaveLength(100);
      const all = await api.call('GET', `${F}?mailboxUid=${mailbox}&limit=1000`, { token: people.alice });
      expect(all.body).toHaveLength(107);
      const page1 = await api.call('GET', `${F}?mailboxUid=${mailbox}&page=1&sort=name`, { token: people.alice });
      expect(page1.body).toHaveLength(7);
      await repo.deleteMany({ mailboxUid: mailbox, role: null });
    });

    it.each([
      ['?limit=1001', 'limit'],
      ['?limit=0', 'limit'],
      ['?limit=abc', 'limit'],
      ['?page=-1', 'page'],
      ['?sort=nosuchfield', 'sort'],
      ['?sort=-password', 'sort'],
      [`?sort=${encodeURIComponent('{"name":2}')}`, 'sort.name'],
      [`?sort=${encodeURIComponent('{bad json')}`, 'sort'],
      ['?nosuchfield=1', 'nosuchfield'],
      ['?enabled=maybe', 'enabled'],
      ['?aliases=x.test', 'aliases'],
    ])('GET %s is refused with 400 api-106 naming %s', async (query, path) => {
      const r = await list(query);
      expect(r.status).toBe(400);
      expect(r.body).toMatchObject({ code: 'api-106', status: 400 });
      expect(r.body.details.map((d: { path: string }) => d.path)).toContain(path);
    });
  });

  describe('HEAD', () => {
    it.each([
      ['', {}, 6],
      ['?enabled=true', { enabled: true }, 4],
      ['?verified=true&enabled=false', { verified: true, enabled: false }, 1],
      ['?name=d1.test&name=d2.test', { name: { $in: ['d1.test', 'd2.test'] } }, 2],
      ['?name=none.test', { name: 'none.test' }, 0],
    ])('HEAD %s answers the count in Content-Length', async (query, filter, n) => {
      const r = await api.call('HEAD', `${D}${query}`, { token: people.admin });
      expect(r.status).toBe(200);
      expect(r.headers.get('content-length')).toBe(String(n));
      expect(r.headers.get('x-total-count')).toBe(String(n));
      expect(r.body).toBeNull();
      expect(await domains().count(filter)).toBe(n);
    });

    it('counts only folders the caller can see', async () => {
      const own = await api.call('HEAD', F, { token: people.alice });
      expect(own.headers.get('content-length')).toBe('7');
      const admin = await api.call('HEAD', F, { token: people.admin });
      expect(admin.headers.get('content-length')).toBe('0');
      const other = await api.call('HEAD', `${F}?mailboxUid=${people.bobBox.uid}`, { token: people.alice });
      expect(other.status).toBe(404);
      expect(await api.deps.store.repo(FolderModel).count()).toBe(14);
    });

    it('refuses a bad filter like the list', async () => {
      const r = await api.call('HEAD', `${D}?nosuchfield=1`, { token: people.admin });
      expect(r.status).toBe(400);
    });
  });

  describe('get and create', () => {
    it('creates with a server uid and version 1, then reads it back', async () => {
      const r = await api.call('POST', D, { token: people.admin, body: { name: 'new.test' } });
      expect(r.status).toBe(201);
      expect(r.body).toMatchObject({ name: 'new.test', version: 1, enabled: true, verified: false });
      const stored = await domains().get(r.body.uid);
      expect(stored).toMatchObject({ name: 'new.test', version: 1 });
      const g = await api.call('GET', `${D}/${r.body.uid}`, { token: people.admin });
      expect(g.status).toBe(200);
      expect(g.body).toEqual(r.body);
      await domains().delete(r.body.uid);
    });

    it.each([
      [{ name: 'uid.test', uid: 'mine' }, 'uid'],
      [{ name: 'ver.test', version: 7 }, 'version'],
      [{ name: 'key.test', dkimPublicKey: 'x' }, 'dkimPublicKey'],
      [{ name: 'Not a domain' }, 'name'],
      [{}, 'name'],
    ])('refuses a create body %j (400 naming %s)', async (body, path) => {
      const before = await domains().count();
      const r = await api.call('POST', D, { token: people.admin, body });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe('api-106');
      expect(JSON.stringify(r.body.details)).toContain(path);
      expect(await domains().count()).toBe(before);
    });

    it('a missing uid answers 404 api-107', async () => {
      const r = await api.call('GET', `${D}/no-such-uid`, { token: people.admin });
      expect(r).toMatchObject({ status: 404, body: { code: 'api-107' } });
    });
  });

  describe('update', () => {
    it('PUT /:id with the current version updates and bumps the version; a stale one is 409', async () => {
      const d = (await domains().findOne({ name: 'd3.test' }))!;
      const ok = await api.call('PUT', `${D}/${d.uid}`, { token: people.admin, body: { verified: true, version: d.version } });
      expect(ok.status).toBe(200);
      expect(ok.body).toMatchObject({ verified: true, version: d.version + 1 });
      const stale = await api.call('PUT', `${D}/${d.uid}`, { token: people.admin, body: { verified: false, version: d.version } });
      expect(stale).toMatchObject({ status: 409, body: { code: 'api-108', status: 409 } });
      expect(await domains().get(d.uid)).toMatchObject({ verified: true, version: d.version + 1 });
    });

    it('of concurrent PUTs with the same version exactly one wins; the others are 409', async () => {
      const d = (await domains().findOne({ name: 'd2.test' }))!;
      const rs = await Promise.all(
        ['a', 'b', 'c', 'd', 'e'].map((s) =>
          api.call('PUT', `${D}/${d.uid}`, { token: people.admin, body: { dkimSelector: `race-${s}`, version: d.version } }),
        ),
      );
      const statuses = rs.map((r) => r.status).sort();
      expect(statuses).toEqual([200, 409, 409, 409, 409]);
      const winner = rs.find((r) => r.status === 200)!.body;
      expect(await domains().get(d.uid)).toMatchObject({ version: d.version + 1, dkimSelector: winner.dkimSelector });
    });

    it.each([
      [{ verified: true }, 'version'],
      [{ verified: true, version: 'one' }, 'version'],
      [{ name: 'renamed.test', version: 1 }, 'name'],
      [{ dkimPublicKey: 'x', version: 1 }, 'dkimPublicKey'],
    ])('PUT /:id with %j is 400 naming %s, nothing stored', async (body, path) => {
      const d = (await domains().findOne({ name: 'd4.test' }))!;
      const r = await api.call('PUT', `${D}/${d.uid}`, { token: people.admin, body });
      expect(r.status).toBe(400);
      expect(JSON.stringify(r.body.details)).toContain(path);
      expect(await domains().get(d.uid)).toEqual(d);
    });

    it('PUT /:id/:property changes one writable property with the version', async () => {
      const d = (await domains().findOne({ name: 'd2.test' }))!;
      const r = await api.call('PUT', `${D}/${d.uid}/aliases`, {
        token: people.admin,
        body: { value: ['d2-alias.test'], version: d.version },
      });
      expect(r.status).toBe(200);
      expect(r.body).toMatchObject({ aliases: ['d2-alias.test'], version: d.version + 1 });
      expect(await domains().get(d.uid)).toMatchObject({ aliases: ['d2-alias.test'], version: d.version + 1 });
      const stale = await api.call('PUT', `${D}/${d.uid}/enabled`, { token: people.admin, body: { value: true, version: d.version } });
      expect(stale).toMatchObject({ status: 409, body: { code: 'api-108' } });
      const bad = await api.call('PUT', `${D}/${d.uid}/enabled`, { token: people.admin, body: { value: 'yes', version: d.version + 1 } });
      expect(bad).toMatchObject({ status: 400, body: { code: 'api-106' } });
      const missing = await api.call('PUT', `${D}/${d.uid}/enabled`, { token: people.admin, body: { value: true } });
      expect(missing.status).toBe(400);
    });

    it.each(['nosuch', 'name', 'dkimPublicKey', 'uid', 'version', 'createdAt'])(
      'PUT /:id/%s (unknown or not writable) is 404',
      async (prop) => {
        const d = (await domains().findOne({ name: 'd5.test' }))!;
        const r = await api.call('PUT', `${D}/${d.uid}/${prop}`, { token: people.admin, body: { value: 'x.test', version: d.version } });
        expect(r).toMatchObject({ status: 404, body: { code: 'api-107' } });
        expect(await domains().get(d.uid)).toEqual(d);
      },
    );

    it('bulk PUT answers a result per item, a stale one included', async () => {
      const [a, b] = await Promise.all([domains().findOne({ name: 'd1.test' }), domains().findOne({ name: 'd5.test' })]);
      const r = await api.call('PUT', D, {
        token: people.admin,
        body: [
          { uid: a!.uid, version: a!.version, dkimSelector: 'bulk' },
          { uid: b!.uid, version: b!.version + 5, dkimSelector: 'bulk' },
          { uid: 'no-such-uid', version: 1, dkimSelector: 'bulk' },
          { uid: a!.uid, dkimSelector: 'bulk' },
        ],
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toEqual([
        { uid: a!.uid, status: 200, version: a!.version + 1 },
        expect.objectContaining({ uid: b!.uid, status: 409, code: 'api-108' }),
        expect.objectContaining({ uid: 'no-such-uid', status: 404, code: 'api-107' }),
        expect.objectContaining({ uid: a!.uid, status: 400, code: 'api-106' }),
      ]);
      expect(await domains().get(a!.uid)).toMatchObject({ dkimSelector: 'bulk', version: a!.version + 1 });
      expect(await domains().get(b!.uid)).toEqual(b);
    });

    it.each([[{ uid: 'x', version: 1 }], [[]], [{}]])('bulk PUT with %j (not a non-empty array) is 400', async (body) => {
      const r = await api.call('PUT', D, { token: people.admin, body });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
    });
  });

  describe('delete', () => {
    const mkFolder = async (name: string) => {
      const r = await api.call('POST', F, { token: people.alice, body: { mailboxUid: people.aliceBox.uid, name } });
      expect(r.status).toBe(201);
      return r.body as { uid: string; version: number };
    };
    const folders = () => api.deps.store.repo(FolderModel);

    it.each([
      ['the body', (uid: string, v: number) => ({ path: `${F}/${uid}`, body: { version: v } })],
      ['?version=', (uid: string, v: number) => ({ path: `${F}/${uid}?version=${v}`, body: undefined })],
    ])('DELETE /:id with the version in %s: stale 409, missing 400, current 204', async (how, req) => {
      const f = await mkFolder(`del-${how.length}`);
      const stale = req(f.uid, f.version + 1);
      expect(await api.call('DELETE', stale.path, { token: people.alice, body: stale.body })).toMatchObject({
        status: 409,
        body: { code: 'api-108' },
      });
      expect(await api.call('DELETE', `${F}/${f.uid}`, { token: people.alice })).toMatchObject({ status: 400, body: { code: 'api-106' } });
      expect(await api.call('DELETE', `${F}/${f.uid}?version=abc`, { token: people.alice })).toMatchObject({ status: 400 });
      expect(await folders().get(f.uid)).not.toBeNull();
      const ok = req(f.uid, f.version);
      const r = await api.call('DELETE', ok.path, { token: people.alice, body: ok.body });
      expect(r.status).toBe(204);
      expect(await folders().get(f.uid)).toBeNull();
      expect(await api.call('DELETE', ok.path, { token: people.alice, body: ok.body })).toMatchObject({ status: 404 });
    });

    it('bulk DELETE answers a result per item and deletes only the current ones', async () => {
      const a = await mkFolder('bulk-del-a');
      const b = await mkFolder('bulk-del-b');
      const inbox = (await folders().findOne({ mailboxUid: people.aliceBox.uid, role: 'inbox' }))!;
      const r = await api.call('DELETE', F, {
        token: people.alice,
        body: [
          { uid: a.uid, version: a.version },
          { uid: b.uid, version: b.version + 1 },
          { uid: inbox.uid, version: inbox.version },
          { uid: 'gone', version: 1 },
        ],
      });
      expect(r.status).toBe(200);
      expect(r.body.results).toEqual([
        { uid: a.uid, status: 200 },
        expect.objectContaining({ uid: b.uid, status: 409, code: 'api-108' }),
        expect.objectContaining({ uid: inbox.uid, status: 409, code: 'api-120' }),
        expect.objectContaining({ uid: 'gone', status: 404, code: 'api-107' }),
      ]);
      expect(await folders().get(a.uid)).toBeNull();
      expect(await folders().get(b.uid)).not.toBeNull();
      expect(await folders().get(inbox.uid)).not.toBeNull();
    });

    it('a resource without DELETE (mailboxes) has no such route', async () => {
      const r = await api.call('DELETE', `/api/mail/mailboxes/${people.aliceBox.uid}`, { token: people.alice, body: { version: 1 } });
      expect(r.status).toBe(404);
    });
  });
});
