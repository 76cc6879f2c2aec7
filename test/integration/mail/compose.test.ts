import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simpleParser } from 'mailparser';
import { loadRaw, MessageModel } from '../../../lib/mail/index.js';
import { BlobModel } from '../../../lib/storage/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw, simpleMail } from '../../helpers/messages.js';

const backends = await sqlBackends();

const ENCRYPTED = (subject: string) =>
  Buffer.from(
    [
      'From: alice@example.test',
      'To: bob@example.test',
      `Subject: ${subject}`,
      'Message-ID: <enc-draft@example.test>',
      'MIME-Version: 1.0',
      'Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"',
      'Content-Transfer-Encoding: base64',
      '',
      Buffer.from('opaque ciphertext zebra words never indexed').toString('base64'),
      '',
    ].join('\r\n'),
  );

describe.each(backends)('compose and directory on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let drafts: { uid: string };
  const folder = async (uid: string) => (await api.call('GET', `/api/mail/folders/${uid}`, { token: p.alice })).body;
  const rawOf = async (uid: string) => {
    const m = await api.deps.store.repo<{ blobId: string }>(MessageModel).get(uid);
    return simpleParser(await loadRaw(api.deps, m!.blobId));
  };
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    const folders = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    drafts = folders.find((f: { role: string }) => f.role === 'drafts');
  });
  afterAll(async () => api?.close());

  it('creates a draft in Drafts with a valid MIME source, sanitized HTML and the default signature', async () => {
    const sig = await api.call('POST', '/api/mail/mail-signatures', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, name: 'work', text: 'Alice, ACME', html: '<b>Alice</b>', isDefault: true },
    });
    expect(sig.status).toBe(201);
    const r = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: {
        mailboxUid: p.aliceBox.uid,
        to: ['bob@example.test', { address: 'carol@example.net', name: 'Carol' }],
        bcc: ['dave@example.net'],
        subject: 'Plans',
        text: 'See you at noon.',
        html: '<p onclick="x()">See you<script>alert(1)</script></p>',
        signature: true,
      },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ draft: true, seen: true, folderUid: drafts.uid, subject: 'Plans', fromAddress: 'alice@example.test' });
    expect(r.body.to.map((a: { address: string }) => a.address)).toEqual(['bob@example.test', 'carol@example.net']);
    expect(r.body.bcc).toEqual([{ address: 'dave@example.net', name: '' }]);
    const mail = await rawOf(r.body.uid);
    expect(mail.text).toContain('See you at noon.\n\n-- \nAlice, ACME');
    expect(mail.html).toContain('<b>Alice</b>');
    expect(mail.html).not.toMatch(/script|onclick/);
    expect(mail.messageId).toMatch(/^<.+@.+>$/);
    expect(await folder(drafts.uid)).toMatchObject({ totalCount: 1, unreadCount: 0 });
  });

  it('replies with In-Reply-To, References, Re: and the quoted text; forwards with the attachments', async () => {
    const orig = await deliverRaw(api, p.aliceBox.uid, simpleMail(7, 'References: <root@example.net>\n'));
    const r = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, replyTo: orig.uid, text: 'Thanks!' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({
      subject: 'Re: Hello 7',
      inReplyTo: '<m7@example.net>',
      references: ['<root@example.net>', '<m7@example.net>'],
      threadId: '<root@example.net>',
    });
    expect(r.body.to).toEqual([{ address: 'carol@example.net', name: 'Carol 7' }]);
    const mail = await rawOf(r.body.uid);
    expect(mail.text).toMatch(/Thanks!\n\nOn .+, Carol 7 <carol@example.net> wrote:\n> Body of message 7\./);

    const withFile = await deliverRaw(
      api,
      p.aliceBox.uid,
      `From: bob@example.test\nTo: alice@example.test\nSubject: file\nMessage-ID: <f@x>\nMIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=b\n\n--b\nContent-Type: text/plain\n\nsee file\n--b\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=a.pdf\nContent-Transfer-Encoding: base64\n\n${Buffer.from('%PDF-1 x').toString('base64')}\n--b--\n`,
    );
    const f = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, forwardOf: withFile.uid, to: ['dave@example.net'] },
    });
    expect(f.status).toBe(201);
    expect(f.body).toMatchObject({ subject: 'Fwd: file', hasAttachments: true });
    expect(f.body.attachments.map((a: { filename: string }) => a.filename)).toEqual(['a.pdf']);
    expect((await rawOf(f.body.uid)).text).toContain('---------- Forwarded message ---------\nFrom: bob@example.test');

    // as an attachment: the original whole, as message/rfc822, not quoted
    const a = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, forwardOf: withFile.uid, forwardAs: 'attachment', to: ['dave@example.net'], text: 'FYI' },
    });
    expect(a.status).toBe(201);
    expect(a.body).toMatchObject({ subject: 'Fwd: file', references: ['<f@x>'] });
    const fwd = await rawOf(a.body.uid);
    expect(fwd.text?.trim()).toBe('FYI');
    expect(fwd.text).not.toContain('Forwarded message');
    expect(fwd.attachments.map((x) => [x.filename, x.contentType])).toEqual([['file.eml', 'message/rfc822']]);
    expect(a.body.attachments).toMatchObject([{ filename: 'file.eml', contentType: 'message/rfc822' }]);
    const inner = await simpleParser(fwd.attachments[0].content);
    expect(inner.messageId).toBe('<f@x>');
    expect(inner.attachments.map((x) => x.filename)).toEqual(['a.pdf']);

    // a sent message forwarded whole keeps its Bcc to itself
    const sent = await deliverRaw(
      api,
      p.aliceBox.uid,
      'From: alice@example.test\nTo: bob@example.test\nBcc: secret@example.net,\n  other@example.net\nSubject: plans\nMessage-ID: <p@x>\n\nour plans\n',
    );
    const whole = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, forwardOf: sent.uid, forwardAs: 'attachment', to: ['dave@example.net'] },
    });
    const forwarded = (await rawOf(whole.body.uid)).attachments[0].content.toString();
    expect(forwarded).toContain('Subject: plans');
    expect(forwarded).toContain('our plans');
    expect(forwarded).not.toMatch(/secret@|other@|^Bcc:/im);
  });

  it('a reply saved again keeps its In-Reply-To and References and is not quoted twice', async () => {
    const orig = await deliverRaw(api, p.aliceBox.uid, simpleMail(8));
    const r = await api.call('POST', '/api/mail/compose', {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, replyTo: orig.uid, text: 'Draft one' },
    });
    const quoted = (await rawOf(r.body.uid)).text!;
    const edited = quoted.replace('Draft one', 'Draft two');
    const up = await api.call('PUT', `/api/mail/compose/${r.body.uid}`, {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, to: ['carol@example.net'], subject: r.body.subject, text: edited, version: r.body.version },
    });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ subject: 'Re: Hello 8', inReplyTo: '<m8@example.net>', references: ['<m8@example.net>'] });
    expect(up.body.threadId).toBe(r.body.threadId);
    const text = (await rawOf(up.body.uid)).text!;
    expect(text.match(/wrote:/g)).toHaveLength(1);
    expect(text).toContain('Draft two');
  });

  it('uploads an attachment and replaces a draft; the old one goes like DELETE (counts, usage, blob)', async () => {
    const c = (
      await api.call('POST', '/api/mail/compose', {
        token: p.alice,
        body: { mailboxUid: p.aliceBox.uid, to: ['bob@example.test'], subject: 'v1', text: 'first' },
      })
    ).body;
    const before = await folder(drafts.uid);
    const bytes = Buffer.alloc(300_000, 7);
    const res = await fetch(`${api.url}/api/mail/compose/${c.uid}/attachments?filename=data.bin&version=${c.version}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'application/octet-stream' },
      body: bytes,
    });
    expect(res.status).toBe(201);
    const withAtt = (await res.json()) as { uid: string; version: number; attachments: unknown[] };
    expect(withAtt.uid).not.toBe(c.uid);
    expect(withAtt).toMatchObject({ subject: 'v1', hasAttachments: true, draft: true });
    expect(withAtt.attachments[0]).toMatchObject({ filename: 'data.bin', contentType: 'application/octet-stream', size: 300_000 });
    // answered as every message route answers a message: the safe name added, hidden fields left out
    expect(withAtt.attachments[0]).toMatchObject({ safeFilename: 'data.bin' });
    expect(withAtt).not.toHaveProperty('ingestKey');
    expect(c).not.toHaveProperty('ingestKey');
    expect((await api.call('GET', `/api/mail/messages/${c.uid}`, { token: p.alice })).status).toBe(404);
    expect(await api.deps.store.repo(BlobModel).get(c.blobId)).toBeNull();
    expect(await folder(drafts.uid)).toMatchObject({ totalCount: before.totalCount });

    const up = await api.call('PUT', `/api/mail/compose/${withAtt.uid}`, {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, to: ['bob@example.test'], subject: 'v2', text: 'second', version: withAtt.version },
    });
    expect(up.status).toBe(200);
    expect(up.body).toMatchObject({ subject: 'v2', hasAttachments: true });
    const att = await fetch(`${api.url}/api/mail/messages/${up.body.uid}/attachments/1`, {
      headers: { authorization: `Bearer ${p.alice}` },
    });
    expect(Buffer.from(await att.arrayBuffer()).equals(bytes)).toBe(true);
    const stale = await api.call('PUT', `/api/mail/compose/${up.body.uid}`, {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, subject: 'v3', version: up.body.version + 5 },
    });
    expect(stale.status).toBe(409);
    // keepAttachments names what stays: a second file, then only it is kept; [] keeps none
    const two = await fetch(`${api.url}/api/mail/compose/${up.body.uid}/attachments?filename=two.txt`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'text/plain' },
      body: 'second file',
    });
    const withTwo = (await two.json()) as { uid: string; version: number; attachments: Array<{ id: string; filename: string }> };
    expect(withTwo.attachments.map((a) => a.filename)).toEqual(['data.bin', 'two.txt']);
    const kept = await api.call('PUT', `/api/mail/compose/${withTwo.uid}`, {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, subject: 'v3', keepAttachments: [withTwo.attachments[1].id] },
    });
    expect(kept.body.attachments.map((a: { filename: string }) => a.filename)).toEqual(['two.txt']);
    const none = await api.call('PUT', `/api/mail/compose/${kept.body.uid}`, {
      token: p.alice,
      body: { mailboxUid: p.aliceBox.uid, subject: 'v4', keepAttachments: [] },
    });
    expect(none.body).toMatchObject({ hasAttachments: false, attachments: [] });
    // a JSON file is a file like any other: its bytes as they came, its type kept (not parsed as the request)
    const json = await fetch(`${api.url}/api/mail/compose/${none.body.uid}/attachments?filename=data.json`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'application/json' },
      body: '{"not": "a request", "n": [1, 2]}',
    });
    expect(json.status).toBe(201);
    const withJson = (await json.json()) as { uid: string; attachments: Array<{ filename: string; contentType: string }> };
    expect(withJson.attachments.at(-1)).toMatchObject({ filename: 'data.json', contentType: 'application/json' });
    expect((await rawOf(withJson.uid)).attachments.at(-1)!.content.toString()).toBe('{"not": "a request", "n": [1, 2]}');
    expect(
      (await api.call('POST', '/api/mail/compose', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, keepAttachments: [] } })).body,
    ).toMatchObject({ status: 400, code: 'api-106' });
    const box = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body;
    const all = await api.deps.store.repo<{ size: number }>(MessageModel).list({ filter: { mailboxUid: p.aliceBox.uid } });
    expect(box.usedBytes).toBe(all.reduce((s, m) => s + m.size, 0));
    expect(await folder(drafts.uid)).toMatchObject({ totalCount: before.totalCount });
  });

  it('refuses a from that is not the mailbox, a reply to a message of another mailbox, and a non-draft', async () => {
    expect(
      (await api.call('POST', '/api/mail/compose', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, from: 'bob@example.test' } }))
        .status,
    ).toBe(400);
    const bobs = await deliverRaw(api, p.bobBox.uid, simpleMail(8));
    expect(
      (await api.call('POST', '/api/mail/compose', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, replyTo: bobs.uid } })).status,
    ).toBe(404);
    const inbox = await deliverRaw(api, p.aliceBox.uid, simpleMail(9));
    expect((await api.call('PUT', `/api/mail/compose/${inbox.uid}`, { token: p.alice, body: { mailboxUid: p.aliceBox.uid } })).status).toBe(
      409,
    );
  });

  it('stores a client-made S/MIME draft as it came: header fields only, ciphertext never parsed', async () => {
    const raw = ENCRYPTED('sealed');
    const res = await fetch(`${api.url}/api/mail/compose/encrypted?mailboxUid=${p.aliceBox.uid}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'application/pkcs7-mime' },
      body: raw,
    });
    expect(res.status).toBe(201);
    const d = (await res.json()) as { uid: string; version: number; blobId: string };
    expect(d).toMatchObject({ smime: 'encrypted', draft: true, subject: 'sealed', attachments: [], preview: '', size: raw.length });
    expect((await loadRaw(api.deps, d.blobId)).equals(raw)).toBe(true);
    const plain = await fetch(`${api.url}/api/mail/compose/encrypted?mailboxUid=${p.aliceBox.uid}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'application/pkcs7-mime' },
      body: Buffer.from(simpleMail(1)),
    });
    expect(plain.status).toBe(400);
    const replaced = await fetch(`${api.url}/api/mail/compose/${d.uid}/encrypted?version=${d.version}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${p.alice}`, 'content-type': 'application/pkcs7-mime' },
      body: ENCRYPTED('sealed 2'),
    });
    expect(replaced.status).toBe(200);
    expect(((await replaced.json()) as { subject: string }).subject).toBe('sealed 2');
    expect(await api.deps.store.repo(MessageModel).get(d.uid)).toBeNull();
  });

  it('answers 404 to another user and to an elevated administrator on every compose route of a mailbox not theirs', async () => {
    const mine = (await api.call('POST', '/api/mail/compose', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, subject: 'private' } }))
      .body;
    for (const who of [p.bob, p.admin]) {
      expect((await api.call('POST', '/api/mail/compose', { token: who, body: { mailboxUid: p.aliceBox.uid, subject: 'x' } })).status).toBe(
        404,
      );
      expect(
        (await api.call('PUT', `/api/mail/compose/${mine.uid}`, { token: who, body: { mailboxUid: p.aliceBox.uid, subject: 'x' } })).status,
      ).toBe(404);
      const att = await fetch(`${api.url}/api/mail/compose/${mine.uid}/attachments?filename=a.txt`, {
        method: 'POST',
        headers: { authorization: `Bearer ${who}`, 'content-type': 'text/plain' },
        body: 'x',
      });
      expect(att.status).toBe(404);
      const enc = await fetch(`${api.url}/api/mail/compose/encrypted?mailboxUid=${p.aliceBox.uid}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${who}`, 'content-type': 'application/pkcs7-mime' },
        body: ENCRYPTED('x'),
      });
      expect(enc.status).toBe(404);
    }
    expect(await api.deps.store.repo(MessageModel).get(mine.uid)).toMatchObject({ subject: 'private' });
  });

  it('lists the directory of mailboxes and distribution lists (address and name only) for any signed-in user', async () => {
    await api.call('POST', '/api/mail/distribution-lists', {
      token: p.admin,
      body: { address: 'team@example.test', name: 'Team', members: ['alice@example.test'] },
    });
    const all = await api.call('GET', '/api/mail/directory', { token: p.bob });
    expect(all.status).toBe(200);
    expect(all.body).toContainEqual({ address: 'alice@example.test', name: 'alice', kind: 'mailbox' });
    expect(all.body.every((e: object) => Object.keys(e).sort().join() === 'address,kind,name')).toBe(true);
    const lists = all.body.filter((e: { kind: string }) => e.kind === 'list');
    const q = await api.call('GET', '/api/mail/directory?q=ALI&limit=1&page=0', { token: p.bob });
    expect(q.body).toEqual([{ address: 'alice@example.test', name: 'alice', kind: 'mailbox' }]);
    expect(q.headers.get('x-total-count')).toBe('1');
    if (lists.length) expect(lists).toContainEqual({ address: 'team@example.test', name: 'Team', kind: 'list' });
    expect((await api.call('GET', '/api/mail/directory')).status).toBe(401);
    expect((await api.call('GET', '/api/mail/directory?bogus=1', { token: p.bob })).status).toBe(400);
  });
});
