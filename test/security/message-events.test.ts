import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntityEvent } from '../../lib/events/index.js';
import { freshSqlite } from '../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';

// docs/SECURITY.md, Attachment names and other sender-chosen strings: a message event shows the
// record as the messages resource shows it (hidden fields such as ingestKey stay hidden;
// attachments carry safeFilename), whichever path writes it — here the send path's scheduled-send
// update, which published the raw record.
describe('message events from the send path', () => {
  let api: TestApi;
  let people: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    api = await startTestApi({ name: 'sqlite', open: async () => freshSqlite() });
    people = await seedUsers(api);
  });
  afterAll(async () => api?.close());

  it("a scheduled send's update event has no field the resource does not show", async () => {
    const draft = await api.call('POST', '/api/mail/compose', {
      token: people.alice,
      body: { mailboxUid: people.aliceBox.uid, to: ['bob@example.test'], subject: 'Later', text: 'see you' },
    });
    expect(draft.status).toBe(201);
    const events: EntityEvent[] = [];
    const off = api.deps.events.subscribe(draft.body.folderUid, (_ch, e) => {
      events.push(e);
    });
    try {
      const sendAt = new Date(Date.now() + 3_600_000).toISOString();
      const r = await api.call('POST', `/api/mail/messages/${draft.body.uid}/send`, { token: people.alice, body: { sendAt } });
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      await expect.poll(() => events.filter((e) => e.type === 'message' && e.action === 'update').length).toBeGreaterThan(0);
    } finally {
      off();
    }
    const shown = (await api.call('GET', `/api/mail/messages/${draft.body.uid}`, { token: people.alice })).body as Record<string, unknown>;
    const update = events.find((e) => e.type === 'message' && e.action === 'update')!;
    const extra = Object.keys(update.data as object).filter((k) => !(k in shown));
    expect(extra).toEqual([]);
    expect(update.data).not.toHaveProperty('ingestKey');
  });
});
