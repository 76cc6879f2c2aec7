// The audit log is read by administrators; it must not become a way to read an owner's own settings.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('audit entries of mailbox changes on $name', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('record which fields the owner changed, never their values', async () => {
    const { alice, admin, aliceBox } = people;
    const r = await api.call('PUT', `/api/mail/mailboxes/${aliceBox.uid}`, {
      token: alice,
      body: { version: aliceBox.version, safeSenders: ['secret-friend@elsewhere.test'] },
    });
    expect(r.status).toBe(200);
    const log = await api.call('GET', `/api/mail/audit-log?resourceUid=${aliceBox.uid}&sort=-createdAt`, { token: admin });
    expect(log.status).toBe(200);
    const entry = log.body.find((e: { action: string }) => e.action === 'mailboxes.update');
    expect(entry.details.changed).toEqual(['safeSenders']);
    expect(JSON.stringify(log.body)).not.toContain('secret-friend');
  });

  it('keep the values of administrative changes', async () => {
    const { admin, aliceBox } = people;
    const cur = await api.call('GET', `/api/mail/mailboxes/${aliceBox.uid}?scope=admin`, { token: admin });
    const r = await api.call('PUT', `/api/mail/mailboxes/${aliceBox.uid}?scope=admin`, {
      token: admin,
      body: { version: cur.body.version, quotaBytes: 5000 },
    });
    expect(r.status).toBe(200);
    const log = await api.call('GET', `/api/mail/audit-log?resourceUid=${aliceBox.uid}&action=mailboxes.update.admin`, { token: admin });
    expect(log.body).toHaveLength(1);
    expect(log.body[0].after.quotaBytes).toBe(5000);
    expect(log.body[0].after).not.toHaveProperty('safeSenders');
  });
});
