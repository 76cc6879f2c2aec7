import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

// Spec: Generic resource routes, PUT /<resource>/:id — clients read a record, change a field and
// PUT the whole record back. Fields they may not write (uid, createdAt, updatedAt, counts,
// immutable and administrative fields) are accepted and ignored when unchanged; a changed one is
// refused by name (400 api-106).

const backends = await sqlBackends();

describe.each(backends)('PUT /:id with the record as read back ($name)', (backend) => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi(backend);
    people = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it('a folder read, renamed and PUT back whole is updated; its counts and uid stay', async () => {
    const created = await api.call('POST', '/api/mail/folders', {
      token: people.alice,
      body: { mailboxUid: people.aliceBox.uid, name: 'Projects' },
    });
    expect(created.status).toBe(201);
    const read = (await api.call('GET', `/api/mail/folders/${created.body.uid}`, { token: people.alice })).body;
    const put = await api.call('PUT', `/api/mail/folders/${read.uid}`, { token: people.alice, body: { ...read, name: 'Projects 2026' } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({
      uid: read.uid,
      name: 'Projects 2026',
      mailboxUid: people.aliceBox.uid,
      version: read.version + 1,
      createdAt: read.createdAt,
    });
  });

  it('a domain read and PUT back whole by an administrator keeps its immutable name and server-managed key', async () => {
    const read = (await api.call('GET', '/api/mail/domains?name=example.test', { token: people.admin })).body[0];
    const put = await api.call('PUT', `/api/mail/domains/${read.uid}`, {
      token: people.admin,
      body: { ...read, aliases: ['example.org'] },
    });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ name: 'example.test', aliases: ['example.org'] });
  });

  it('a message with an attachment, read and PUT back whole with seen set, is updated (attachments, safe names and counts unchanged)', async () => {
    const draft = (
      await api.call('POST', '/api/mail/compose', {
        token: people.alice,
        body: { mailboxUid: people.aliceBox.uid, to: ['bob@example.test'], subject: 'With a file', text: 'x' },
      })
    ).body;
    const up = await fetch(`${api.url}/api/mail/compose/${draft.uid}/attachments?filename=${encodeURIComponent('CON.txt')}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${people.alice}`, 'content-type': 'text/plain' },
      body: 'hello',
    });
    expect(up.status).toBeLessThan(300);
    const withFile = (await up.json()) as { uid: string };
    const read = (await api.call('GET', `/api/mail/messages/${withFile.uid}`, { token: people.alice })).body;
    expect(read.attachments[0]).toMatchObject({ filename: 'CON.txt', safeFilename: '_CON.txt' });
    const put = await api.call('PUT', `/api/mail/messages/${read.uid}`, { token: people.alice, body: { ...read, flagged: true } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body).toMatchObject({ flagged: true, attachments: read.attachments });
  });

  it.each([
    [
      'uid',
      (r: Record<string, unknown>) => ({ ...r, uid: '00000000-0000-7000-8000-000000000000' }),
      /uid cannot be changed here \(managed by the server\)/,
    ],
    ['createdAt', (r: Record<string, unknown>) => ({ ...r, createdAt: '2001-01-01T00:00:00.000Z' }), /createdAt cannot be changed here/],
    [
      'mailboxUid',
      (r: Record<string, unknown>) => ({ ...r, mailboxUid: people.bobBox.uid }),
      /mailboxUid cannot be changed here \(fixed when the record is created\)/,
    ],
  ])('a changed %s is refused by name and nothing changes', async (field, change, message) => {
    const created = (
      await api.call('POST', '/api/mail/folders', { token: people.alice, body: { mailboxUid: people.aliceBox.uid, name: `F-${field}` } })
    ).body;
    const read = (await api.call('GET', `/api/mail/folders/${created.uid}`, { token: people.alice })).body;
    const r = await api.call('PUT', `/api/mail/folders/${read.uid}`, { token: people.alice, body: change({ ...read, name: 'changed' }) });
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'api-106', details: [{ path: field, message: 'read-only' }] });
    expect(r.body.message).toMatch(message);
    expect((await api.call('GET', `/api/mail/folders/${read.uid}`, { token: people.alice })).body).toEqual(read);
  });
});
