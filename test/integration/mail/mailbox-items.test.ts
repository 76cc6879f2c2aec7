// Labels, mail-filter-rules, mail-signatures, focused-inbox-overrides, preferences/appearance:
// mailbox-scoped resources with the generic routes, validated on write, invisible to strangers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FilterRuleModel, FocusedOverrideModel, LabelModel } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';

const backends = await sqlBackends();

describe.each(backends)('mailbox items on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let archive: { uid: string };
  let bobInbox: { uid: string };
  const post = (path: string, body: unknown, token = p.alice) => api.call('POST', `/api/mail/${path}`, { token, body });
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    archive = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}&role=archive`, { token: p.alice })).body[0];
    bobInbox = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.bobBox.uid}&role=inbox`, { token: p.bob })).body[0];
  });
  afterAll(async () => api?.close());

  it('labels: created, renamed, unique per mailbox (the same name is fine in another mailbox)', async () => {
    const l = await post('labels', { mailboxUid: p.aliceBox.uid, name: 'Work', color: '#ff0000' });
    expect(l.status).toBe(201);
    expect((await post('labels', { mailboxUid: p.aliceBox.uid, name: 'Work' })).status).toBe(409);
    expect((await post('labels', { mailboxUid: p.bobBox.uid, name: 'Work' }, p.bob)).status).toBe(201);
    expect((await post('labels', { mailboxUid: p.aliceBox.uid, name: 'Bad', color: 'red' })).status).toBe(400);
    const renamed = await api.call('PUT', `/api/mail/labels/${l.body.uid}`, {
      token: p.alice,
      body: { name: 'Job', version: l.body.version },
    });
    expect(renamed.status).toBe(200);
    expect(await api.deps.store.repo(LabelModel).get(l.body.uid)).toMatchObject({
      name: 'Job',
      color: '#ff0000',
      mailboxUid: p.aliceBox.uid,
      version: 2,
    });
  });

  it('filter rules: targets checked on create and update; a missing folder or label is refused with a clear error', async () => {
    const label = (await post('labels', { mailboxUid: p.aliceBox.uid, name: 'Ops' })).body;
    const bobLabel = (await post('labels', { mailboxUid: p.bobBox.uid, name: 'Bobs' }, p.bob)).body;
    const ok = await post('mail-filter-rules', {
      mailboxUid: p.aliceBox.uid,
      name: 'ops',
      position: 1,
      match: 'any',
      conditions: [
        { field: 'from', op: 'endsWith', value: '@ops.example' },
        { field: 'header', name: 'List-Id', op: 'exists' },
      ],
      actions: [
        { type: 'move', folderUid: archive.uid },
        { type: 'label', labelUid: label.uid },
        { type: 'forward', to: ['Pager@Example.NET'] },
      ],
    });
    expect(ok.status).toBe(201);
    const stored = await api.deps.store.repo<{ actions: unknown[]; conditions: unknown[] }>(FilterRuleModel).get(ok.body.uid);
    expect(stored!.actions).toEqual([
      { type: 'move', folderUid: archive.uid },
      { type: 'label', labelUid: label.uid },
      { type: 'forward', to: ['pager@example.net'] },
    ]);
    expect(stored!.conditions).toContainEqual({ field: 'header', name: 'List-Id', op: 'exists', value: '' });

    const missingFolder = await post('mail-filter-rules', {
      mailboxUid: p.aliceBox.uid,
      actions: [{ type: 'move', folderUid: '00000000-0000-7000-8000-000000000000' }],
    });
    expect(missingFolder.status).toBe(400);
    expect(missingFolder.body.message).toMatch(/no folder .* in this mailbox/);
    expect(missingFolder.body.details).toEqual([{ path: 'actions.0.folderUid', message: 'unknown folder' }]);
    const otherFolder = await post('mail-filter-rules', {
      mailboxUid: p.aliceBox.uid,
      actions: [{ type: 'copy', folderUid: bobInbox.uid }],
    });
    expect(otherFolder.status).toBe(400);
    const otherLabel = await post('mail-filter-rules', {
      mailboxUid: p.aliceBox.uid,
      actions: [{ type: 'markRead' }, { type: 'label', labelUid: bobLabel.uid }],
    });
    expect(otherLabel.status).toBe(400);
    expect(otherLabel.body.details).toEqual([{ path: 'actions.1.labelUid', message: 'unknown label' }]);
    const badUpdate = await api.call('PUT', `/api/mail/mail-filter-rules/${ok.body.uid}`, {
      token: p.alice,
      body: { actions: [{ type: 'label', labelUid: 'nope' }], version: ok.body.version },
    });
    expect(badUpdate.status).toBe(400);
    expect((await post('mail-filter-rules', { mailboxUid: p.aliceBox.uid, actions: [] })).status).toBe(400);
    expect(
      (
        await post('mail-filter-rules', {
          mailboxUid: p.aliceBox.uid,
          conditions: [{ field: 'body', op: 'contains', value: 'x' }],
          actions: [{ type: 'delete' }],
        })
      ).status,
    ).toBe(400);
    // Refused writes left nothing behind; the good rule is untouched.
    const rules = await api.deps.store.repo(FilterRuleModel).list({ filter: { mailboxUid: p.aliceBox.uid } });
    expect(rules.map((r) => r.uid)).toEqual([ok.body.uid]);
    expect(rules[0].version).toBe(1);
  });

  it('signatures: HTML sanitized on create and update', async () => {
    const s = await post('mail-signatures', {
      mailboxUid: p.aliceBox.uid,
      name: 'main',
      text: 'A.',
      html: '<p onclick="steal()">A.<script>x()</script><iframe src="https://evil.example/"></iframe></p>',
    });
    expect(s.status).toBe(201);
    expect(s.body.html).not.toMatch(/onclick|script|iframe|evil\.example/);
    expect(s.body.html).toContain('A.');
    const u = await api.call('PUT', `/api/mail/mail-signatures/${s.body.uid}`, {
      token: p.alice,
      body: { html: '<a href="javascript:alert(1)">x</a>', version: s.body.version },
    });
    expect(u.status).toBe(200);
    expect(u.body.html).not.toMatch(/javascript/);
    expect((await post('mail-signatures', { mailboxUid: p.aliceBox.uid, name: '' })).status).toBe(400);
  });

  it('focused overrides: an address or @domain, lower-cased, one per sender', async () => {
    const o = await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: '@News.Example', classification: 'other' });
    expect(o.status).toBe(201);
    expect(await api.deps.store.repo(FocusedOverrideModel).get(o.body.uid)).toMatchObject({
      sender: '@news.example',
      classification: 'other',
    });
    expect(
      (await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: '@news.example', classification: 'focused' })).status,
    ).toBe(409);
    expect(
      (await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: 'not an address', classification: 'focused' })).status,
    ).toBe(400);
    expect(
      (await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: 'boss@corp.example', classification: 'maybe' })).status,
    ).toBe(400);
  });

  it('appearance: one record per mailbox with defaults; values validated', async () => {
    const a = await post('preferences/appearance', { mailboxUid: p.aliceBox.uid, theme: 'dark' });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ theme: 'dark', density: 'comfortable', readingPane: 'right', conversationView: true, language: null });
    expect((await post('preferences/appearance', { mailboxUid: p.aliceBox.uid, theme: 'light' })).status).toBe(409);
    expect((await post('preferences/appearance', { mailboxUid: p.bobBox.uid, theme: 'neon' }, p.bob)).status).toBe(400);
    const u = await api.call('PUT', `/api/mail/preferences/appearance/${a.body.uid}`, {
      token: p.alice,
      body: { density: 'compact', language: 'de-DE', version: a.body.version },
    });
    expect(u.status).toBe(200);
    expect(u.body).toMatchObject({ theme: 'dark', density: 'compact', language: 'de-DE' });
  });

  it('answers 404 to another user and an elevated administrator on signatures, overrides and appearance not theirs', async () => {
    const sig = (await post('mail-signatures', { mailboxUid: p.aliceBox.uid, name: 'private-sig', text: 'secret words' })).body;
    const ovr = (
      await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: 'lover@private.example', classification: 'focused' })
    ).body;
    const app = (await api.call('GET', `/api/mail/preferences/appearance?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body[0];
    const items: Array<[string, { uid: string; version: number }, Record<string, unknown>]> = [
      ['mail-signatures', sig, { name: 'x' }],
      ['focused-inbox-overrides', ovr, { classification: 'other' }],
      ['preferences/appearance', app, { theme: 'light' }],
    ];
    for (const token of [p.bob, p.admin]) {
      for (const [path, rec, patch] of items) {
        for (const [method, url, body] of [
          ['GET', `/api/mail/${path}/${rec.uid}`, undefined],
          ['PUT', `/api/mail/${path}/${rec.uid}`, { ...patch, version: rec.version }],
          ['DELETE', `/api/mail/${path}/${rec.uid}`, { version: rec.version }],
          ['GET', `/api/mail/${path}?mailboxUid=${p.aliceBox.uid}`, undefined],
        ] as Array<[string, string, unknown]>) {
          const r = await api.call(method, url, { token, body });
          expect(r.status, `${method} ${url}`).toBe(404);
          expect(JSON.stringify(r.body)).not.toMatch(/secret words|lover@/);
        }
      }
      expect((await post('mail-signatures', { mailboxUid: p.aliceBox.uid, name: 'intruder' }, token)).status).toBe(404);
      expect(
        (await post('focused-inbox-overrides', { mailboxUid: p.aliceBox.uid, sender: '@evil.example', classification: 'focused' }, token))
          .status,
      ).toBe(404);
    }
    for (const [path, rec] of items) {
      expect((await api.call('GET', `/api/mail/${path}/${rec.uid}`, { token: p.alice })).body).toMatchObject({
        uid: rec.uid,
        version: rec.version,
      });
    }
  });
});
