import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AddressModel, FolderModel, MailboxModel, SYSTEM_FOLDERS, type Folder } from '../../../lib/mail/index.js';
import { DomainModel } from '../../../lib/settings/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();
type Row = Folder & { uid: string; version: number };

describe.each(backends)('folders and domains on $name', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  const F = '/api/mail/folders';

  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  const folders = () => api.deps.store.repo<Folder>(FolderModel);
  const system = async (role: string) => (await folders().findOne({ mailboxUid: people.aliceBox.uid, role })) as Row;
  const mk = async (name: string, parentUid: string | null = null) => {
    const r = await api.call('POST', F, { token: people.alice, body: { mailboxUid: people.aliceBox.uid, name, parentUid } });
    expect(r.status).toBe(201);
    return r.body as Row;
  };

  describe('system folders', () => {
    it('are created with the mailbox, with roles and zero counts', async () => {
      const rows = await folders().list({ filter: { mailboxUid: people.aliceBox.uid }, limit: 100 });
      expect(rows.map((f) => [f.role, f.name, f.unreadCount, f.totalCount, f.parentUid]).sort()).toEqual(
        SYSTEM_FOLDERS.map((s) => [s.role, s.name, 0, 0, null]).sort(),
      );
    });

    it.each(SYSTEM_FOLDERS.map((s) => [s.name, s.role] as const))(
      '%s cannot be deleted, renamed or moved (409 api-120)',
      async (_name, role) => {
        const f = await system(role);
        const parent = await mk(`holder-${role}`);
        const cases = [
          api.call('DELETE', `${F}/${f.uid}`, { token: people.alice, body: { version: f.version } }),
          api.call('PUT', `${F}/${f.uid}`, { token: people.alice, body: { name: `${f.name} 2`, version: f.version } }),
          api.call('PUT', `${F}/${f.uid}/name`, { token: people.alice, body: { value: 'Renamed', version: f.version } }),
          api.call('PUT', `${F}/${f.uid}`, { token: people.alice, body: { parentUid: parent.uid, version: f.version } }),
        ];
        for (const r of await Promise.all(cases)) expect(r).toMatchObject({ status: 409, body: { code: 'api-120' } });
        expect(await folders().get(f.uid)).toEqual(f);
      },
    );

    it.each([
      ['role', 'inbox'],
      ['unreadCount', 3],
      ['totalCount', 3],
    ])('a client cannot set the server field %s (400)', async (field, value) => {
      const r = await api.call('POST', F, {
        token: people.alice,
        body: { mailboxUid: people.aliceBox.uid, name: `x-${field}`, [field]: value },
      });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
      expect(await folders().findOne({ name: `x-${field}` })).toBeNull();
    });
  });

  describe('user folders', () => {
    it('create, nest, rename and move', async () => {
      const projects = await mk('Projects');
      expect(projects).toMatchObject({
        name: 'Projects',
        parentUid: null,
        role: null,
        unreadCount: 0,
        totalCount: 0,
        version: 1,
        mailboxUid: people.aliceBox.uid,
      });
      const alpha = await mk('Alpha', projects.uid);
      expect(await folders().get(alpha.uid)).toMatchObject({ parentUid: projects.uid, mailboxUid: people.aliceBox.uid });
      const renamed = await api.call('PUT', `${F}/${alpha.uid}`, {
        token: people.alice,
        body: { name: 'Alpha One', version: alpha.version },
      });
      expect(renamed).toMatchObject({ status: 200, body: { name: 'Alpha One', version: 2 } });
      const moved = await api.call('PUT', `${F}/${alpha.uid}/parentUid`, { token: people.alice, body: { value: null, version: 2 } });
      expect(moved).toMatchObject({ status: 200, body: { parentUid: null, version: 3 } });
      expect(await folders().get(alpha.uid)).toMatchObject({ name: 'Alpha One', parentUid: null, version: 3 });
      // a user folder may live under a system folder
      const inbox = await system('inbox');
      const sub = await mk('Receipts', inbox.uid);
      expect(sub.parentUid).toBe(inbox.uid);
    });

    it.each([
      ['the same name', 'Dup'],
      ['the same name in another case', 'dUP'],
    ])('a sibling with %s is 409 api-112; the same name elsewhere is fine', async (what, second) => {
      const parent = await mk(`Parent ${what}`);
      await mk('Dup', parent.uid);
      const before = await folders().count({ mailboxUid: people.aliceBox.uid });
      const r = await api.call('POST', F, {
        token: people.alice,
        body: { mailboxUid: people.aliceBox.uid, name: second, parentUid: parent.uid },
      });
      expect(r).toMatchObject({ status: 409, body: { code: 'api-112' } });
      expect(await folders().count({ mailboxUid: people.aliceBox.uid })).toBe(before);
      // renaming a sibling onto the name is refused too
      const other = await mk('Other', parent.uid);
      const ren = await api.call('PUT', `${F}/${other.uid}`, { token: people.alice, body: { name: second, version: other.version } });
      expect(ren).toMatchObject({ status: 409, body: { code: 'api-112' } });
      // bob may have a folder named like one of alice's
      expect(
        (await api.call('POST', F, { token: people.bob, body: { mailboxUid: people.bobBox.uid, name: `Parent ${what}`, parentUid: null } }))
          .status,
      ).toBe(201);
    });

    it('a system folder name is taken at the top level', async () => {
      const r = await api.call('POST', F, { token: people.alice, body: { mailboxUid: people.aliceBox.uid, name: 'inbox' } });
      expect(r).toMatchObject({ status: 409, body: { code: 'api-112' } });
    });

    it.each([
      ['under itself', (a: Row) => a.uid],
      ['under its own child', (_a: Row, child: Row) => child.uid],
      ['under its grandchild', (_a: Row, _c: Row, grand: Row) => grand.uid],
    ])('moving a folder %s is refused (400), nothing changed', async (what, target) => {
      const a = await mk(`Tree ${what}`);
      const child = await mk('Child', a.uid);
      const grand = await mk('Grand', child.uid);
      const r = await api.call('PUT', `${F}/${a.uid}`, {
        token: people.alice,
        body: { parentUid: target(a, child, grand), version: a.version },
      });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
      expect(await folders().get(a.uid)).toMatchObject({ parentUid: null, version: 1 });
    });

    it.each([
      ['a folder of another mailbox', async () => (await folders().findOne({ mailboxUid: people.bobBox.uid, role: 'inbox' }))!.uid],
      ['a folder that does not exist', async () => 'no-such-folder'],
    ])('a parent that is %s is refused (400)', async (_what, parent) => {
      const r = await api.call('POST', F, {
        token: people.alice,
        body: { mailboxUid: people.aliceBox.uid, name: 'Stray', parentUid: await parent() },
      });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
      expect(await folders().findOne({ name: 'Stray' })).toBeNull();
    });

    it('a folder cannot change mailbox (mailboxUid is fixed at creation, 400)', async () => {
      const f = await mk('Mine');
      const r = await api.call('PUT', `${F}/${f.uid}`, {
        token: people.alice,
        body: { mailboxUid: people.bobBox.uid, version: f.version },
      });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
      const p = await api.call('PUT', `${F}/${f.uid}/mailboxUid`, {
        token: people.alice,
        body: { value: people.bobBox.uid, version: f.version },
      });
      expect(p.status).toBe(404);
      expect(await folders().get(f.uid)).toMatchObject({ mailboxUid: people.aliceBox.uid, version: 1 });
    });

    it('a folder with subfolders cannot be deleted (409 api-120); empty, it can', async () => {
      const top = await mk('Top');
      const leaf = await mk('Leaf', top.uid);
      expect(await api.call('DELETE', `${F}/${top.uid}?version=1`, { token: people.alice })).toMatchObject({
        status: 409,
        body: { code: 'api-120' },
      });
      expect(await folders().get(top.uid)).not.toBeNull();
      expect((await api.call('DELETE', `${F}/${leaf.uid}?version=1`, { token: people.alice })).status).toBe(204);
      expect((await api.call('DELETE', `${F}/${top.uid}?version=1`, { token: people.alice })).status).toBe(204);
      expect(await folders().get(top.uid)).toBeNull();
    });

    it.each([
      ['', 'empty'],
      ['a/b', 'slash'],
      ['tab\there', 'control'],
      ['x'.repeat(256), 'too long'],
    ])('the name %j is refused (%s)', async (name) => {
      const r = await api.call('POST', F, { token: people.alice, body: { mailboxUid: people.aliceBox.uid, name } });
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
    });
  });

  describe('domains and mailbox addresses', () => {
    const mailboxes = () => api.deps.store.repo(MailboxModel);
    const createBox = (body: Record<string, unknown>) =>
      api.call('POST', '/api/mail/mailboxes', { token: people.admin, body: { owners: ['carol'], ...body } });

    it('a domain name is unique (409 api-112)', async () => {
      const r = await api.call('POST', '/api/mail/domains', { token: people.admin, body: { name: 'Example.Test' } });
      expect(r).toMatchObject({ status: 409, body: { code: 'api-112' } });
      expect(await api.deps.store.repo(DomainModel).count({ name: 'example.test' })).toBe(1);
    });

    it.each([
      ['an unserved domain', { address: 'carol@nowhere.test' }],
      ['an alias on an unserved domain', { address: 'carol@example.test', aliases: ['c@nowhere.test'] }],
      ['a malformed address', { address: 'not an address' }],
    ])('a mailbox with %s is 400, nothing stored', async (_what, body) => {
      const before = await mailboxes().count();
      const r = await createBox(body);
      expect(r).toMatchObject({ status: 400, body: { code: 'api-106' } });
      expect(await mailboxes().count()).toBe(before);
      expect(await api.deps.store.repo(AddressModel).count({ address: 'carol@example.test' })).toBe(0);
    });

    it.each([
      ['the primary address of another mailbox', { address: 'Alice@Example.test' }],
      ['an alias equal to another primary', { address: 'carol2@example.test', aliases: ['bob@example.test'] }],
    ])('%s is taken (409 api-112), nothing stored', async (_what, body) => {
      const before = await mailboxes().count();
      const r = await createBox(body);
      expect(r).toMatchObject({ status: 409, body: { code: 'api-112' } });
      expect(await mailboxes().count()).toBe(before);
    });

    it('an address of a domain alias is served; an alias taken later is 409 on update', async () => {
      const d = await api.call('POST', '/api/mail/domains', { token: people.admin, body: { name: 'main.test', aliases: ['alias.test'] } });
      expect(d.status).toBe(201);
      const r = await createBox({ address: 'carol@alias.test', aliases: ['c@main.test'] });
      expect(r.status).toBe(201);
      expect(await api.deps.store.repo(AddressModel).count({ mailboxUid: r.body.uid })).toBe(2);
      const boxRec = (await mailboxes().get(people.bobBox.uid))!;
      const up = await api.call('PUT', `/api/mail/mailboxes/${people.bobBox.uid}?scope=admin`, {
        token: people.admin,
        body: { aliases: ['c@main.test'], version: boxRec.version },
      });
      expect(up).toMatchObject({ status: 409, body: { code: 'api-112' } });
      expect(await mailboxes().get(people.bobBox.uid)).toEqual(boxRec);
      const ok = await api.call('PUT', `/api/mail/mailboxes/${people.bobBox.uid}?scope=admin`, {
        token: people.admin,
        body: { aliases: ['robert@example.test'], version: boxRec.version },
      });
      expect(ok).toMatchObject({ status: 200, body: { aliases: ['robert@example.test'] } });
      expect(await api.deps.store.repo(AddressModel).findOne({ address: 'robert@example.test' })).toMatchObject({
        mailboxUid: people.bobBox.uid,
        kind: 'alias',
      });
    });
  });
});
