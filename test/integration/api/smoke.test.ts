import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('api smoke on $name', (backend) => {
  let api: TestApi;
  beforeAll(async () => {
    api = await startTestApi(backend);
  });
  afterAll(async () => api?.close());

  it('serves status and creates a mailbox with its system folders', async () => {
    const s = await api.call('GET', '/api/status');
    expect(s.status).toBe(200);
    const { alice, aliceBox } = await seedUsers(api);
    const folders = await api.call('GET', `/api/mail/folders?mailboxUid=${aliceBox.uid}&sort=name`, { token: alice });
    expect(folders.status).toBe(200);
    expect(folders.body.map((f: { name: string }) => f.name)).toEqual([
      'Archive',
      'Deleted Items',
      'Drafts',
      'Inbox',
      'Junk',
      'Outbox',
      'Sent Items',
    ]);
  });
});
