// An alias added after enrolment makes the mailbox's key discoverable under it; a removed one stops.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createVault } from '../../../lib/keys/client/index.js';
import { discoveryHash } from '../../../lib/keys/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { keyTestValues, TEST_ARGON2 } from './helpers.js';

const backends = await sqlBackends();

describe.each(backends)('key discovery follows mailbox aliases on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend, await keyTestValues());
    p = await seedUsers(api);
    const v = await createVault(p.aliceBox.uid, 'alice@example.test', 'pw', { argon2: TEST_ARGON2 });
    expect((await api.call('POST', `/api/mail/mailboxes/${p.aliceBox.uid}/keyvault/enroll`, { token: p.alice, body: v.body })).status).toBe(
      201,
    );
  }, 60_000);
  afterAll(async () => api?.close());

  const lookup = (local: string) => api.call('GET', `/.well-known/svc/keys/${discoveryHash(local)}?domain=example.test`);

  it('answers for a new alias, and stops when it is removed', async () => {
    expect((await lookup('ali')).status).toBe(404);
    const cur = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}?scope=admin`, { token: p.admin })).body;
    const added = await api.call('PUT', `/api/mail/mailboxes/${p.aliceBox.uid}?scope=admin`, {
      token: p.admin,
      body: { version: cur.version, aliases: ['ali@example.test'] },
    });
    expect(added.status).toBe(200);
    expect((await lookup('ali')).status).toBe(200);
    expect((await lookup('alice')).status).toBe(200);
    const removed = await api.call('PUT', `/api/mail/mailboxes/${p.aliceBox.uid}?scope=admin`, {
      token: p.admin,
      body: { version: added.body.version, aliases: [] },
    });
    expect(removed.status).toBe(200);
    expect((await lookup('ali')).status).toBe(404);
  });

  it('does not make a mailbox without keys discoverable', async () => {
    const cur = (await api.call('GET', `/api/mail/mailboxes/${p.bobBox.uid}?scope=admin`, { token: p.admin })).body;
    await api.call('PUT', `/api/mail/mailboxes/${p.bobBox.uid}?scope=admin`, {
      token: p.admin,
      body: { version: cur.version, aliases: ['robert@example.test'] },
    });
    expect((await lookup('robert')).status).toBe(404);
  });
});
