import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { MessageModel, type Message } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw } from '../../helpers/messages.js';

const backends = await sqlBackends();

const mail = (
  n: number,
  o: { from?: string; to?: string; subject: string; body: string; date: string; attach?: boolean },
) => `From: ${o.from ?? 'Carol <carol@example.net>'}
To: ${o.to ?? 'alice@example.test'}
Subject: ${o.subject}
Date: ${o.date}
Message-ID: <s${n}@example.net>
MIME-Version: 1.0
${
  o.attach
    ? `Content-Type: multipart/mixed; boundary="b"

--b
Content-Type: text/plain

${o.body}
--b
Content-Type: application/pdf
Content-Disposition: attachment; filename="a.pdf"
Content-Transfer-Encoding: base64

JVBERg==
--b--
`
    : `Content-Type: text/plain; charset=utf-8

${o.body}
`
}`;

const SMIME = `From: carol@example.net
To: alice@example.test
Subject: sealed envelope
Message-ID: <enc@example.net>
MIME-Version: 1.0
Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"
Content-Transfer-Encoding: base64

${Buffer.from('pineapple pineapple pineapple ciphertext').toString('base64')}
`;

describe.each(backends)('mail search on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  const uids: Record<string, string> = {};
  let archive: { uid: string };
  const search = async (qs: string, token = p.alice) => api.call('GET', `/api/mail/search?mailboxUid=${p.aliceBox.uid}&${qs}`, { token });
  const subjects = (r: { body: Array<{ subject: string }> }) => r.body.map((m) => m.subject);

  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    archive = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body.find(
      (f: { role: string }) => f.role === 'archive',
    );
    uids.budget = (
      await deliverRaw(
        api,
        p.aliceBox.uid,
        mail(1, {
          subject: 'Budget 2027',
          body: 'The quarterly numbers are attached.',
          date: 'Mon, 02 Nov 2026 10:00:00 +0000',
          attach: true,
        }),
      )
    ).uid;
    uids.lunch = (
      await deliverRaw(
        api,
        p.aliceBox.uid,
        mail(2, {
          from: 'Dave Miller <dave@example.org>',
          subject: 'Lunch?',
          body: 'Pizza or sushi on Friday, quarterly team lunch.',
          date: 'Tue, 03 Nov 2026 10:00:00 +0000',
        }),
      )
    ).uid;
    uids.straße = (
      await deliverRaw(
        api,
        p.aliceBox.uid,
        mail(3, {
          to: 'alice@example.test, Erin <erin@example.test>',
          subject: '=?UTF-8?Q?Stra=C3=9Fenfest?=',
          body: 'Kommst du zum Fest?',
          date: 'Wed, 04 Nov 2026 10:00:00 +0000',
        }),
      )
    ).uid;
    uids.enc = (await deliverRaw(api, p.aliceBox.uid, SMIME)).uid;
    uids.bobs = (
      await deliverRaw(
        api,
        p.bobBox.uid,
        mail(4, { to: 'bob@example.test', subject: 'Quarterly for bob', body: 'quarterly', date: 'Thu, 05 Nov 2026 10:00:00 +0000' }),
      )
    ).uid;
  });
  afterAll(async () => api?.close());

  it('finds words in subject, body, names and addresses, newest first, only in the asked mailbox', async () => {
    expect(subjects(await search('q=quarterly'))).toEqual(['Lunch?', 'Budget 2027']);
    expect(subjects(await search('q=MILLER'))).toEqual(['Lunch?']);
    expect(subjects(await search('q=erin%40example.test'))).toEqual(['Straßenfest']);
    expect(subjects(await search('q=pizza+friday'))).toEqual(['Lunch?']);
    expect(subjects(await search('q=pizza+monday'))).toEqual([]);
    expect(subjects(await search('q=quart'))).toEqual(['Lunch?', 'Budget 2027']); // prefixes
  });

  it('never indexes the body of S/MIME ciphertext (only its headers)', async () => {
    expect(subjects(await search('q=pineapple'))).toEqual([]);
    expect(subjects(await search('q=sealed'))).toEqual(['sealed envelope']);
  });

  it('filters by folder, sender, recipient, dates, attachments, unread, flagged and label, and pages', async () => {
    const lunch = (await api.call('GET', `/api/mail/messages/${uids.lunch}`, { token: p.alice })).body;
    expect(
      (
        await api.call('PUT', `/api/mail/messages/${uids.lunch}`, {
          token: p.alice,
          body: { flagged: true, seen: true, labels: ['food'], version: lunch.version },
        })
      ).status,
    ).toBe(200);
    expect(subjects(await search('q=quarterly&flagged=true'))).toEqual(['Lunch?']);
    expect(subjects(await search('q=quarterly&unread=true'))).toEqual(['Budget 2027']);
    expect(subjects(await search('label=food'))).toEqual(['Lunch?']);
    expect(subjects(await search('q=quarterly&hasAttachments=true'))).toEqual(['Budget 2027']);
    expect(subjects(await search('from=DAVE%40example.org'))).toEqual(['Lunch?']);
    // subject words are looked for in the subject only (prefix, case ignored); q still searches everything
    expect(subjects(await search('subject=lunc'))).toEqual(['Lunch?']);
    expect(subjects(await search(`subject=${encodeURIComponent('STRAß')}`))).toEqual(['Straßenfest']);
    expect(subjects(await search('subject=quarterly'))).toEqual([]);
    expect(subjects(await search('q=quarterly&subject=budget'))).toEqual(['Budget 2027']);
    expect(subjects(await search('to=erin%40example.test'))).toEqual(['Straßenfest']);
    expect(subjects(await search('after=2026-11-03T00:00:00Z&before=2026-11-04T00:00:00Z'))).toEqual(['Lunch?']);
    expect((await search('')).body).toHaveLength(4);
    expect(subjects(await search('limit=1&page=1&q=quarterly'))).toEqual(['Budget 2027']);
    expect(
      (await api.call('POST', `/api/mail/messages/${uids.budget}/move`, { token: p.alice, body: { folderUid: archive.uid } })).status,
    ).toBe(200);
    expect(subjects(await search(`q=quarterly&folderUid=${archive.uid}`))).toEqual(['Budget 2027']);
    const copy = await api.call('POST', `/api/mail/messages/${uids.lunch}/copy`, { token: p.alice, body: { folderUid: archive.uid } });
    expect(subjects(await search(`q=sushi&folderUid=${archive.uid}`))).toEqual(['Lunch?']);
    // Deleting a message takes it out of the index too (stored state: no row, no hit).
    expect(
      (await api.call('DELETE', `/api/mail/messages/${copy.body.uid}`, { token: p.alice, body: { version: copy.body.version } })).status,
    ).toBe(204);
    expect(await api.deps.store.repo(MessageModel).search('sushi', { filter: { folderUid: archive.uid } })).toEqual([]);
    expect((await search('unread=maybe')).status).toBe(400);
    expect((await search('bogus=1')).status).toBe(400);
  });

  it('answers 404 to another user and an elevated administrator on search, labels and rules of a mailbox not theirs', async () => {
    const label = await api.call('POST', '/api/mail/labels', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'secret-label' },
    });
    expect(label.status).toBe(201);
    const rule = await api.call('POST', '/api/mail/mail-filter-rules', {
      token: p.alice,
      body: {
        mailboxUid: p.aliceBox.uid,
        conditions: [{ field: 'subject', op: 'contains', value: 'x' }],
        actions: [{ type: 'label', labelUid: label.body.uid }],
      },
    });
    expect(rule.status).toBe(201);
    for (const token of [p.bob, p.admin]) {
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/api/mail/search?mailboxUid=${p.aliceBox.uid}&q=quarterly`],
        ['GET', `/api/mail/labels/${label.body.uid}`],
        ['PUT', `/api/mail/labels/${label.body.uid}`, { name: 'x', version: label.body.version }],
        ['DELETE', `/api/mail/labels/${label.body.uid}`, { version: label.body.version }],
        ['POST', '/api/mail/labels', { mailboxUid: p.aliceBox.uid, name: 'intruder' }],
        ['GET', `/api/mail/mail-filter-rules/${rule.body.uid}`],
        ['PUT', `/api/mail/mail-filter-rules/${rule.body.uid}`, { enabled: false, version: rule.body.version }],
        ['DELETE', `/api/mail/mail-filter-rules/${rule.body.uid}`, { version: rule.body.version }],
        ['POST', '/api/mail/mail-filter-rules', { mailboxUid: p.aliceBox.uid, actions: [{ type: 'markRead' }] }],
      ];
      for (const [method, path, body] of calls) {
        const r = await api.call(method, path, { token, body });
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(JSON.stringify(r.body)).not.toMatch(/quarterly|secret-label/i);
      }
      const lists = await api.call('GET', `/api/mail/labels?mailboxUid=${p.aliceBox.uid}`, { token });
      expect(lists.body ?? []).not.toContainEqual(expect.objectContaining({ name: 'secret-label' }));
    }
    // Nothing changed: the label and the rule are as alice left them.
    expect((await api.call('GET', `/api/mail/labels/${label.body.uid}`, { token: p.alice })).body).toMatchObject({
      name: 'secret-label',
      version: label.body.version,
    });
    expect((await api.call('GET', `/api/mail/mail-filter-rules/${rule.body.uid}`, { token: p.alice })).body).toMatchObject({
      enabled: true,
      version: rule.body.version,
    });
    expect(
      subjects(
        await search('q=quarterly', p.bob).then(() =>
          api.call('GET', `/api/mail/search?mailboxUid=${p.bobBox.uid}&q=quarterly`, { token: p.bob }),
        ),
      ),
    ).toEqual(['Quarterly for bob']);
  });

  it('recipient and label filters are store queries: exact on the oldest of thousands, one query per page, no scan cap', async () => {
    const dave = await api.token({ uid: 'dave', roles: [] });
    const box = await api.call('POST', '/api/mail/mailboxes', {
      token: p.admin,
      body: { address: 'dave@example.test', owners: ['dave'], name: 'dave' },
    });
    expect(box.status).toBe(201);
    const inbox = (await api.call('GET', `/api/mail/folders?mailboxUid=${box.body.uid}`, { token: dave })).body.find(
      (f: { role: string }) => f.role === 'inbox',
    );
    const N = 3000;
    const row = (i: number, over: Partial<Message> = {}) => ({
      mailboxUid: box.body.uid,
      folderUid: inbox.uid,
      blobId: 'ab'.repeat(32),
      size: 100,
      threadId: `<t${i}@x>`,
      subject: `bulk ${i}`,
      date: new Date(Date.UTC(2026, 0, 1, 0, i)),
      to: [{ address: 'dave@example.test', name: '' }],
      labels: i % 2 ? ['common'] : [],
      ...over,
    });
    // Rows straight through the store, in one transaction (fast); the match is the oldest of them all.
    const needle = await api.deps.store.transaction(async (tx) => {
      const repo = tx.repo<Message>(MessageModel);
      const first = await repo.create(
        row(0, {
          subject: 'the needle',
          date: new Date('2020-01-01T00:00:00Z'),
          to: [{ address: 'someone@example.org', name: '' }],
          cc: [{ address: 'needle@example.net', name: 'N' }],
          labels: ['rare'],
        }) as Message,
      );
      for (let i = 1; i < N; i++) await repo.create(row(i) as Message);
      return first;
    });
    const repo = api.deps.store.repo(MessageModel);
    // Every repo's list (each request reads through a store session of its own): the message list calls are counted.
    const list = vi.spyOn(Object.getPrototypeOf(repo) as typeof repo, 'list');
    const messageLists = () => list.mock.calls.filter((_, i) => (list.mock.contexts[i] as typeof repo).model.name === MessageModel.name);
    try {
      const find = async (qs: string) =>
        (await api.call('GET', `/api/mail/search?mailboxUid=${box.body.uid}&${qs}`, { token: dave })).body as Array<{
          uid: string;
          subject: string;
        }>;
      expect((await find('to=needle%40example.net')).map((m) => m.uid)).toEqual([needle.uid]);
      expect((await find('label=rare')).map((m) => m.uid)).toEqual([needle.uid]);
      expect(messageLists()).toHaveLength(2);
      expect(messageLists()[0][0]).toMatchObject({ limit: 50, offset: 0, filter: { recipients: { $has: 'needle@example.net' } } });
      // Deep pages are exact: the last page of the common label ends with its oldest row.
      const last = await find('label=common&limit=200&page=7');
      expect(last).toHaveLength(N / 2 - 1400);
      expect(last.at(-1)!.subject).toBe('bulk 1');
      expect(await find('to=dave%40example.test&label=rare')).toEqual([]);
      expect(await repo.count({ mailboxUid: box.body.uid, labels: { $has: 'common' } })).toBe(N / 2);
      expect(await repo.count({ mailboxUid: box.body.uid, recipients: { $has: 'dave@example.test' } })).toBe(N - 1);
    } finally {
      list.mockRestore();
    }
  }, 60_000);
});
