import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DistributionListModel, type DistributionList } from '../../../lib/ingest/models.js';
import { MailboxModel, type Mailbox } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('directory on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    await api.deps.store.repo<DistributionList>(DistributionListModel).create({
      address: 'team@example.test',
      name: 'The Team',
      members: ['alice@example.test', 'secret-member@example.net'],
      membersOnly: false,
      allowExternalMembers: true,
    });
    await api.call('PATCH', `/api/mail/mailboxes/${p.aliceBox.uid}?scope=admin`, {
      token: p.admin,
      body: { quotaBytes: 12345, version: p.aliceBox.version },
    });
  });
  afterAll(async () => api?.close());

  it('lists every mailbox and distribution list, name and address only, to any signed-in user', async () => {
    const r = await api.call('GET', '/api/mail/directory', { token: p.bob });
    expect(r.status).toBe(200);
    expect(r.body).toEqual([
      { address: 'alice@example.test', name: 'alice', kind: 'mailbox' },
      { address: 'bob@example.test', name: 'bob', kind: 'mailbox' },
      { address: 'team@example.test', name: 'The Team', kind: 'list' },
    ]);
    expect(r.headers.get('x-total-count')).toBe('3');
    // Nothing else of a mailbox or a list leaks: no uid, quota, members.
    expect(JSON.stringify(r.body)).not.toMatch(/uid|quota|secret-member|usedBytes/);
  });

  it('filters by a case-insensitive substring of address or name and pages', async () => {
    expect((await api.call('GET', '/api/mail/directory?q=TEAM', { token: p.alice })).body).toEqual([
      { address: 'team@example.test', name: 'The Team', kind: 'list' },
    ]);
    expect(
      (await api.call('GET', '/api/mail/directory?q=the%20t', { token: p.alice })).body.map((e: { address: string }) => e.address),
    ).toEqual(['team@example.test']);
    const page1 = await api.call('GET', '/api/mail/directory?limit=2&page=1', { token: p.alice });
    expect(page1.body.map((e: { address: string }) => e.address)).toEqual(['team@example.test']);
    expect(page1.headers.get('x-total-count')).toBe('3');
    expect((await api.call('GET', '/api/mail/directory?q=nobody', { token: p.alice })).body).toEqual([]);
  });

  it('needs a signed-in caller and validates its query', async () => {
    expect((await api.call('GET', '/api/mail/directory')).status).toBe(401);
    expect((await api.call('GET', '/api/mail/directory?limit=0', { token: p.bob })).status).toBe(400);
    expect((await api.call('GET', '/api/mail/directory?other=1', { token: p.bob })).status).toBe(400);
  });

  it('pages through the store: every entry exactly once in address order, totals and prefix queries exact', async () => {
    const boxes = api.deps.store.repo<Mailbox>(MailboxModel);
    const lists = api.deps.store.repo<DistributionList>(DistributionListModel);
    // Mailboxes and lists interleave in address order (m00 < l00-x < m01 …), straight through the store.
    for (let i = 0; i < 30; i++)
      await boxes.create({ address: `m${String(i).padStart(2, '0')}@corp.test`, name: `Member ${i}` } as Mailbox);
    for (let i = 0; i < 12; i++)
      await lists.create({
        address: `m${String(i * 2).padStart(2, '0')}-list@corp.test`,
        name: `List ${i}`,
        members: [],
        membersOnly: false,
        allowExternalMembers: true,
      });
    const all = async (qs: string, limit: number) => {
      const seen: Array<{ address: string; kind: string }> = [];
      let total = -1;
      for (let page = 0; page < 100; page++) {
        const r = await api.call('GET', `/api/mail/directory?limit=${limit}&page=${page}${qs}`, { token: p.bob });
        expect(r.status).toBe(200);
        total = Number(r.headers.get('x-total-count'));
        if (!r.body.length) break;
        seen.push(...r.body);
      }
      return { seen, total };
    };
    const full = await all('', 5);
    expect(full.total).toBe(3 + 30 + 12);
    const addresses = full.seen.map((e) => e.address);
    expect(addresses).toHaveLength(full.total);
    expect(addresses).toEqual([...addresses].sort());
    expect(new Set(addresses).size).toBe(addresses.length);
    expect(full.seen.filter((e) => e.kind === 'list')).toHaveLength(13);
    // Any page size gives the same sequence.
    expect((await all('', 7)).seen.map((e) => e.address)).toEqual(addresses);
    expect((await all('', 1000)).seen.map((e) => e.address)).toEqual(addresses);
    // Prefix of the address, of the domain, of a word of the name; paged too.
    const m1 = await all('&q=M1', 3);
    expect(m1.seen.map((e) => e.address)).toEqual([
      'm10-list@corp.test',
      'm10@corp.test',
      'm11@corp.test',
      'm12-list@corp.test',
      'm12@corp.test',
      'm13@corp.test',
      'm14-list@corp.test',
      'm14@corp.test',
      'm15@corp.test',
      'm16-list@corp.test',
      'm16@corp.test',
      'm17@corp.test',
      'm18-list@corp.test',
      'm18@corp.test',
      'm19@corp.test',
    ]);
    expect(m1.total).toBe(15);
    expect((await all('&q=corp.test', 10)).total).toBe(42);
    expect((await all('&q=list%207', 10)).seen.map((e) => e.address)).toEqual(['m14-list@corp.test']);
    // Renames and deletes are seen at once (the index is written with the record).
    const m29 = (await boxes.findOne({ address: 'm29@corp.test' }))!;
    await boxes.update(m29.uid, { name: 'Zelda Quartermaster' });
    expect((await all('&q=quarter', 10)).seen.map((e) => e.address)).toEqual(['m29@corp.test']);
    await lists.deleteMany({ address: { $in: ['m00-list@corp.test', 'm02-list@corp.test'] } });
    const after = await all('&q=m0', 4);
    expect(after.seen.map((e) => e.address)).toEqual([
      'm00@corp.test',
      'm01@corp.test',
      'm02@corp.test',
      'm03@corp.test',
      'm04-list@corp.test',
      'm04@corp.test',
      'm05@corp.test',
      'm06-list@corp.test',
      'm06@corp.test',
      'm07@corp.test',
      'm08-list@corp.test',
      'm08@corp.test',
      'm09@corp.test',
    ]);
    expect(after.total).toBe(13);
  });
});
