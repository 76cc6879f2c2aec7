import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

// GET /api/mail/search without mailboxUid searches the mailboxes the caller
// owns (like a list without a filter: yours; none owned, an empty list); never another's mail.
const backends = await sqlBackends();

describe.each(backends)('searching without mailboxUid ($name)', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
    for (const [token, box, subject] of [
      [people.alice, people.aliceBox.uid, 'Alice own search'],
      [people.bob, people.bobBox.uid, 'Bob own search'],
    ] as const) {
      expect(
        (
          await api.call('POST', '/api/mail/compose', {
            token,
            body: { mailboxUid: box, to: ['someone@example.test'], subject, text: 'x' },
          })
        ).status,
      ).toBe(201);
    }
  });
  afterAll(async () => api?.close());

  it("searches the own mailbox: alice finds hers and never bob's", async () => {
    const r = await api.call('GET', '/api/mail/search', { token: people.alice });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.map((m: { subject: string }) => m.subject)).toEqual(['Alice own search']);
  });

  it('a caller owning no mailbox gets an empty list; one owning several searches them all', async () => {
    const none = await api.call('GET', '/api/mail/search', { token: await api.token({ uid: 'nobody' }) });
    expect(none).toMatchObject({ status: 200, body: [] });
    const second = await api.call('POST', '/api/mail/mailboxes', {
      token: people.admin,
      body: { address: 'alice2@example.test', owners: ['alice'] },
    });
    expect(second.status).toBe(201);
    expect(
      (
        await api.call('POST', '/api/mail/compose', {
          token: people.alice,
          body: { mailboxUid: second.body.uid, to: ['someone@example.test'], subject: 'Second box', text: 'x' },
        })
      ).status,
    ).toBe(201);
    const both = await api.call('GET', '/api/mail/search', { token: people.alice });
    expect(both.body.map((m: { subject: string }) => m.subject).sort()).toEqual(['Alice own search', 'Second box']);
    // bob's own search still shows only his
    expect((await api.call('GET', '/api/mail/search', { token: people.bob })).body.map((m: { subject: string }) => m.subject)).toEqual([
      'Bob own search',
    ]);
  });
});
