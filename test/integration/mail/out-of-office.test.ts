// GET/PUT /api/mail/mailboxes/:id/out-of-office: the owner reads and sets the reply the delivery
// rules send (the same record ActiveSync's Settings command changes); another user, an elevated
// administrator and a reader without write get 404 or 403; a bad body is a 400 that changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AclEntryModel } from '../../../lib/acl/index.js';
import { AutoReplyModel } from '../../../lib/ingest/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';

const [backend] = await sqlBackends();

describe('out-of-office settings', () => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const path = () => `/api/mail/mailboxes/${p.aliceBox.uid}/out-of-office`;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('reads the default, sets a reply with a period, and delivery reads the same record', async () => {
    expect((await api.call('GET', path(), { token: p.alice })).body).toEqual({
      enabled: false,
      subject: 'Out of office',
      body: '',
      startsAt: null,
      endsAt: null,
    });
    const set = {
      enabled: true,
      subject: 'Away until Monday',
      body: 'I read mail on Monday.',
      startsAt: '2026-12-01T00:00:00.000Z',
      endsAt: '2026-12-07T00:00:00.000Z',
    };
    const r = await api.call('PUT', path(), { token: p.alice, body: set });
    expect(r).toMatchObject({ status: 200, body: set });
    expect((await api.call('GET', path(), { token: p.alice })).body).toEqual(set);
    const stored = await api.deps.store.repo<{ enabled: boolean; endsAt: Date }>(AutoReplyModel).findOne({ mailboxUid: p.aliceBox.uid });
    expect(stored).toMatchObject({ enabled: true, endsAt: new Date(set.endsAt) });
    expect((await api.call('PUT', path(), { token: p.alice, body: { ...set, enabled: false } })).body.enabled).toBe(false);
  });

  it('refuses a bad body with the reason, and changes nothing', async () => {
    const before = (await api.call('GET', path(), { token: p.alice })).body;
    const bad = [
      { enabled: true, subject: 'x', body: '', startsAt: '2026-12-07T00:00:00Z', endsAt: '2026-12-01T00:00:00Z' },
      { enabled: true, subject: '', body: '' },
      { enabled: 'yes', subject: 'x', body: '' },
      { enabled: true, subject: 'x', body: '', extra: 1 },
    ];
    for (const body of bad)
      expect((await api.call('PUT', path(), { token: p.alice, body })).body).toMatchObject({ status: 400, code: 'api-106' });
    expect((await api.call('GET', path(), { token: p.alice })).body).toEqual(before);
  });

  it('another user and an elevated administrator get 404; a reader without write gets 403', async () => {
    const body = { enabled: true, subject: 'Hijacked', body: '' };
    const admin = await api.token({ uid: 'root', roles: ['admin'], elevated: new Date() });
    for (const token of [p.bob, admin]) {
      expect((await api.call('GET', path(), { token })).status).toBe(404);
      expect((await api.call('PUT', path(), { token, body })).status).toBe(404);
    }
    await api.deps.store.repo<Record<string, unknown>>(AclEntryModel).create({
      resource: 'mailboxes',
      resourceUid: p.aliceBox.uid,
      subject: 'user:bob',
      rights: ['read'],
      mailboxUid: p.aliceBox.uid,
    });
    expect((await api.call('GET', path(), { token: p.bob })).status).toBe(200);
    expect((await api.call('PUT', path(), { token: p.bob, body })).body).toMatchObject({ status: 403, code: 'api-102' });
    expect((await api.call('GET', path(), { token: p.alice })).body.subject).not.toBe('Hijacked');
  });
});
