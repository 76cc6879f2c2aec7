import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageModel } from '../../../lib/mail/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { deliverRaw, simpleMail } from '../../helpers/messages.js';

const backends = await sqlBackends();

const WITH_ATTACHMENTS = `From: bob@example.test
To: alice@example.test
Subject: =?UTF-8?B?UmVwb3J0IMO8YmVyIMOEcGZlbA==?=
Message-ID: <att@example.test>
MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="b1"

--b1
Content-Type: multipart/alternative; boundary="b2"

--b2
Content-Type: text/plain; charset=iso-8859-1
Content-Transfer-Encoding: quoted-printable

Gr=FC=DFe aus K=F6ln
--b2
Content-Type: text/html; charset=utf-8

<p>Grüße aus Köln</p>
--b2--
--b1
Content-Type: text/html; name="evil.html"
Content-Disposition: attachment; filename="../../evil.html"
Content-Transfer-Encoding: base64

${Buffer.from('<script>alert(1)</script>').toString('base64')}
--b1
Content-Type: application/pdf; name="report.pdf"
Content-Disposition: attachment; filename="report.pdf"
Content-Transfer-Encoding: base64

${Buffer.from('%PDF-1.4 fake').toString('base64')}
--b1--
`;

const SMIME = `From: bob@example.test
To: alice@example.test
Subject: secret
Message-ID: <smime@example.test>
MIME-Version: 1.0
Content-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"
Content-Disposition: attachment; filename="smime.p7m"
Content-Transfer-Encoding: base64

${Buffer.from('not really ciphertext but opaque bytes the server must not parse words from').toString('base64')}
`;

describe.each(backends)('messages on $name', (backend) => {
  let api: TestApi;
  let p: Awaited<ReturnType<typeof seedUsers>>;
  let inbox: { uid: string };
  let archive: { uid: string };
  const folder = async (uid: string) => (await api.call('GET', `/api/mail/folders/${uid}`, { token: p.alice })).body;
  beforeAll(async () => {
    api = await startTestApi(backend);
    p = await seedUsers(api);
    const folders = (await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice })).body;
    inbox = folders.find((f: { role: string }) => f.role === 'inbox');
    archive = folders.find((f: { role: string }) => f.role === 'archive');
  });
  afterAll(async () => api?.close());

  it('files a delivered message once per idempotency key, with counts, usage and parsed fields', async () => {
    const first = await deliverRaw(api, p.aliceBox.uid, WITH_ATTACHMENTS, { idempotencyKey: 'tx-1' });
    const again = await deliverRaw(api, p.aliceBox.uid, WITH_ATTACHMENTS, { idempotencyKey: 'tx-1' });
    expect(again.uid).toBe(first.uid);
    const m = (await api.call('GET', `/api/mail/messages/${first.uid}`, { token: p.alice })).body;
    expect(m).toMatchObject({
      subject: 'Report über Äpfel',
      fromAddress: 'bob@example.test',
      hasAttachments: true,
      seen: false,
      smime: null,
      preview: 'Grüße aus Köln',
    });
    expect(m).not.toHaveProperty('ingestKey');
    expect(m.attachments.map((a: { filename: string }) => a.filename)).toEqual(['../../evil.html', 'report.pdf']);
    expect(await folder(inbox.uid)).toMatchObject({ totalCount: 1, unreadCount: 1 });
    const box = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body;
    expect(box.usedBytes).toBe(m.size);
  });

  it('serves the raw source and attachments as downloads that never render inline', async () => {
    const [m] = (await api.call('GET', `/api/mail/messages?folderUid=${inbox.uid}`, { token: p.alice })).body;
    const raw = await fetch(`${api.url}/api/mail/messages/${m.uid}/raw`, { headers: { authorization: `Bearer ${p.alice}` } });
    expect(raw.headers.get('content-type')).toMatch(/^message\/rfc822/);
    expect(await raw.text()).toContain('Message-ID: <att@example.test>');
    const html = await fetch(`${api.url}/api/mail/messages/${m.uid}/attachments/1`, { headers: { authorization: `Bearer ${p.alice}` } });
    expect(html.status).toBe(200);
    expect(html.headers.get('content-disposition')).toMatch(/^attachment; filename="?evil\.html"?$/);
    expect(html.headers.get('content-security-policy')).toContain('sandbox');
    expect(html.headers.get('x-content-type-options')).toBe('nosniff');
    expect(await html.text()).toBe('<script>alert(1)</script>');
    const pdf = await fetch(`${api.url}/api/mail/messages/${m.uid}/attachments/2`, { headers: { authorization: `Bearer ${p.alice}` } });
    expect(pdf.headers.get('content-type')).toBe('application/pdf');
    expect(await pdf.text()).toBe('%PDF-1.4 fake');
    expect((await api.call('GET', `/api/mail/messages/${m.uid}/attachments/3`, { token: p.alice })).status).toBe(404);
  });

  it('serves the body with the HTML sanitized, and nothing of an encrypted one', async () => {
    const m = await deliverRaw(
      api,
      p.aliceBox.uid,
      `From: x@example.net\nTo: alice@example.test\nSubject: html\nMIME-Version: 1.0\nContent-Type: text/html; charset=utf-8\n\n<p onclick="steal()">Hi<script>alert(1)</script><img src="https://tracker.example/p.gif"></p>\n`,
    );
    const b = (await api.call('GET', `/api/mail/messages/${m.uid}/body`, { token: p.alice })).body;
    expect(b.encrypted).toBe(false);
    expect(b.html).toContain('Hi');
    expect(b.html).not.toMatch(/script|onclick|steal/);
    const enc = await deliverRaw(api, p.aliceBox.uid, SMIME);
    expect((await api.call('GET', `/api/mail/messages/${enc.uid}/body`, { token: p.alice })).body).toEqual({
      encrypted: true,
      text: null,
      html: null,
      senderVerified: false,
      safeSender: false,
      receipt: null,
    });
    expect((await api.call('GET', `/api/mail/messages/${m.uid}/body`, { token: p.bob })).status).toBe(404);
  });

  it('stores S/MIME ciphertext without parsing or previewing its body', async () => {
    const m = await deliverRaw(api, p.aliceBox.uid, SMIME);
    expect(m).toMatchObject({ smime: 'encrypted', preview: '', attachments: [], hasAttachments: false, subject: 'secret' });
  });

  it('lists a mailbox’s encrypted messages across its folders (smime filter: what the web app’s local index catches up with)', async () => {
    const enc = await deliverRaw(api, p.aliceBox.uid, SMIME.replace('<smime@', '<smime-filter@'));
    const plain = await deliverRaw(api, p.aliceBox.uid, simpleMail(4242));
    await api.call('POST', `/api/mail/messages/${enc.uid}/move`, { token: p.alice, body: { folderUid: archive.uid } });
    const list = async (query: string, token = p.alice) =>
      api.call('GET', `/api/mail/messages?mailboxUid=${p.aliceBox.uid}&${query}`, { token });
    const encrypted = (await list('smime=encrypted&sort=-date')).body as Array<{ uid: string; smime: string; folderUid: string }>;
    expect(encrypted.length).toBeGreaterThan(1);
    expect(encrypted.every((m) => m.smime === 'encrypted')).toBe(true);
    expect(encrypted.find((m) => m.uid === enc.uid)?.folderUid).toBe(archive.uid);
    expect(encrypted.map((m) => m.uid)).not.toContain(plain.uid);
    const unencrypted = (await list('smime=null')).body as Array<{ uid: string }>;
    expect(unencrypted.map((m) => m.uid)).toContain(plain.uid);
    expect(unencrypted.map((m) => m.uid)).not.toContain(enc.uid);
    const head = await fetch(`${api.url}/api/mail/messages?mailboxUid=${p.aliceBox.uid}&smime=encrypted`, {
      method: 'HEAD',
      headers: { authorization: `Bearer ${p.alice}` },
    });
    expect(Number(head.headers.get('x-total-count'))).toBe(encrypted.length);
    expect((await list('smime=sealed')).body).toEqual([]);
    expect((await list('smime=encrypted', p.bob)).status).toBe(404);
  });

  it('keeps counts exact under 200 concurrent flag, move, bulk PUT and bulk DELETE operations', async () => {
    const msgs: Array<{ uid: string; size: number }> = [];
    for (let i = 0; i < 60; i++) msgs.push(await deliverRaw(api, p.aliceBox.uid, simpleMail(1000 + i)));
    const doomed = msgs.slice(40);
    // Each operation reads the version it writes against; a message deleted meanwhile answers 404.
    const versionOf = async (uid: string) => (await api.call('GET', `/api/mail/messages/${uid}`, { token: p.alice })).body?.version ?? 1;
    type Bulk = { status: number; body: { results: Array<{ uid: string; status: number }> } };
    const deletes: Array<Promise<Bulk>> = [];
    const ops = Array.from({ length: 200 }, (_, i) => {
      const m = msgs[i % msgs.length];
      switch (i % 5) {
        case 0:
          return api.call('POST', `/api/mail/messages/${m.uid}/move`, {
            token: p.alice,
            body: { folderUid: i % 10 === 0 ? archive.uid : inbox.uid },
          });
        case 3: {
          const some = [m, msgs[(i + 7) % msgs.length], msgs[(i + 13) % msgs.length]];
          return Promise.all(
            some.map(async (x) => ({ uid: x.uid, version: await versionOf(x.uid), seen: i % 2 === 0, flagged: i % 3 === 0 })),
          ).then((body) => api.call('PUT', '/api/mail/messages', { token: p.alice, body }));
        }
        case 4: {
          const k = Math.floor(i / 5);
          const some = [doomed[k % doomed.length], doomed[(k + 1) % doomed.length]];
          const del = Promise.all(some.map(async (x) => ({ uid: x.uid, version: await versionOf(x.uid) }))).then((body) =>
            api.call('DELETE', '/api/mail/messages', { token: p.alice, body }),
          );
          deletes.push(del);
          return del;
        }
        default:
          return versionOf(m.uid).then((version) =>
            api.call('PUT', `/api/mail/messages/${m.uid}/seen`, { token: p.alice, body: { value: i % 2 === 0, version } }),
          );
      }
    });
    const results = await Promise.all(ops);
    for (const [i, r] of results.entries()) {
      if (i % 5 === 3 || i % 5 === 4) {
        expect(r.status).toBe(200);
        for (const item of r.body.results) expect([200, 404, 409]).toContain(item.status);
      } else {
        expect([200, 404, 409]).toContain(r.status);
      }
    }
    // Every message a bulk DELETE reported deleted is gone, each exactly once; every other one is still there.
    const deletedOk = (await Promise.all(deletes)).flatMap((r) => r.body.results.filter((x) => x.status === 200).map((x) => x.uid));
    expect(new Set(deletedOk).size).toBe(deletedOk.length);
    const repo = api.deps.store.repo<{ size: number; folderUid: string; seen: boolean }>(MessageModel);
    for (const m of msgs) expect(Boolean(await repo.get(m.uid)), m.uid).toBe(!deletedOk.includes(m.uid));
    expect(deletedOk.length).toBeGreaterThan(0);
    expect(
      results
        .filter((_, i) => i % 5 === 3)
        .flatMap((r) => r.body.results)
        .filter((x: { status: number }) => x.status === 200).length,
    ).toBeGreaterThan(0);
    // Folder counters and mailbox usage equal what the rows say.
    for (const f of [inbox, archive]) {
      const rows = await repo.list({ filter: { folderUid: f.uid }, limit: 10_000 });
      expect(await folder(f.uid)).toMatchObject({ totalCount: rows.length, unreadCount: rows.filter((r) => !r.seen).length });
    }
    const all = await repo.list({ filter: { mailboxUid: p.aliceBox.uid }, limit: 10_000 });
    const box = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body;
    expect(box.usedBytes).toBe(all.reduce((a, r) => a + r.size, 0));
  }, 60_000);

  it('copies share the raw source; deleting every copy frees usage and counts', async () => {
    const m = await deliverRaw(api, p.aliceBox.uid, simpleMail(900));
    const before = (await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body.usedBytes;
    const copy = await api.call('POST', `/api/mail/messages/${m.uid}/copy`, { token: p.alice, body: { folderUid: archive.uid } });
    expect(copy.status).toBe(201);
    expect(copy.body.blobId).toBe(m.blobId);
    const archiveBefore = await folder(archive.uid);
    for (const uid of [m.uid, copy.body.uid]) {
      const cur = (await api.call('GET', `/api/mail/messages/${uid}`, { token: p.alice })).body;
      expect((await api.call('DELETE', `/api/mail/messages/${uid}`, { token: p.alice, body: { version: cur.version } })).status).toBe(204);
    }
    expect((await api.call('GET', `/api/mail/mailboxes/${p.aliceBox.uid}`, { token: p.alice })).body.usedBytes).toBe(before - m.size);
    expect((await folder(archive.uid)).totalCount).toBe(archiveBefore.totalCount - 1);
  });

  it('refuses deleting a folder that still holds mail, and empties one', async () => {
    const f = (await api.call('POST', '/api/mail/folders', { token: p.alice, body: { mailboxUid: p.aliceBox.uid, name: 'Trip' } })).body;
    const m = await deliverRaw(api, p.aliceBox.uid, simpleMail(901), { folderUid: f.uid });
    expect(m.folderUid).toBe(f.uid);
    const cur = await folder(f.uid);
    expect((await api.call('DELETE', `/api/mail/folders/${f.uid}`, { token: p.alice, body: { version: cur.version } })).status).toBe(409);
    const emptied = await api.call('POST', `/api/mail/folders/${f.uid}/empty`, { token: p.alice });
    expect(emptied.body).toMatchObject({ removed: 1, folder: { totalCount: 0, unreadCount: 0 } });
  });

  it('answers 404 to another user and an elevated administrator on every message route', async () => {
    const [m] = (await api.call('GET', `/api/mail/messages?folderUid=${inbox.uid}`, { token: p.alice })).body;
    for (const token of [p.bob, p.admin]) {
      const calls: Array<[string, string, unknown?]> = [
        ['GET', `/api/mail/messages/${m.uid}`],
        ['GET', `/api/mail/messages/${m.uid}/raw`],
        ['GET', `/api/mail/messages/${m.uid}/attachments/1`],
        ['GET', `/api/mail/messages?folderUid=${inbox.uid}`],
        ['GET', `/api/mail/messages?mailboxUid=${p.aliceBox.uid}`],
        ['PUT', `/api/mail/messages/${m.uid}/seen`, { value: true, version: m.version }],
        ['DELETE', `/api/mail/messages/${m.uid}`, { version: m.version }],
        ['POST', `/api/mail/messages/${m.uid}/move`, { folderUid: archive.uid }],
        ['POST', `/api/mail/messages/${m.uid}/copy`, { folderUid: archive.uid }],
        ['POST', `/api/mail/folders/${inbox.uid}/empty`],
      ];
      for (const [method, path, body] of calls) {
        const r = await api.call(method, path, { token, body });
        expect(r.status, `${method} ${path}`).toBe(404);
        expect(JSON.stringify(r.body)).not.toContain('Grüße');
      }
    }
    expect((await api.call('GET', `/api/mail/messages/${m.uid}`, { token: p.alice })).status).toBe(200);
  });
});
