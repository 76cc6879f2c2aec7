// docs/SECURITY.md, Attachment names and other sender-chosen strings, against the real api app and
// database: attachment names a sender writes as paths, Windows device names, with bidi overrides or
// control characters come back as sent in `filename` and with a safe `safeFilename` beside them, in
// every answer that lists attachments (the record, the folder listing, search, move, copy, Deleted
// Items, the push event of a copy), also for records filed before the safe name was stored;
// downloads are named with the safe name; and the OpenAPI document says so.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { EntityEvent } from '../../lib/events/index.js';
import { MessageModel } from '../../lib/mail/index.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';
import { sqlBackends } from '../helpers/databases.js';
import { deliverRaw } from '../helpers/messages.js';

const backends = await sqlBackends();

/** A part named by an RFC 2231 filename* parameter: any character a sender likes, percent-encoded. */
const part = (name: string, body = 'x') =>
  `--b\r\nContent-Type: application/octet-stream\r\nContent-Disposition: attachment; filename*=UTF-8''${encodeURIComponent(name)}\r\nContent-Transfer-Encoding: base64\r\n\r\n${Buffer.from(body).toString('base64')}\r\n`;

const NAMES: Array<[sent: string, safe: string]> = [
  ['../../../etc/evil.html', 'evil.html'],
  ['..\\..\\Windows\\System32\\drivers\\etc\\hosts', 'hosts'],
  ['CON.txt', '_CON.txt'],
  ['invoice\u202Efdp.exe', 'invoicefdp.exe'],
  ['bell\u0007\u001b[31mred.txt', 'bell[31mred.txt'],
  ['.htaccess', 'htaccess'],
  ['report.pdf. . ', 'report.pdf'],
  ['..', 'attachment-8'],
  ['plain report.pdf', 'plain report.pdf'],
];

const RAW =
  `From: mallory@remote.example\r\nTo: alice@example.test\r\nSubject: names\r\nMessage-ID: <names@remote.example>\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary="b"\r\n\r\n` +
  `--b\r\nContent-Type: text/plain\r\n\r\nsee attached\r\n${NAMES.map(([n], i) => part(n, `file ${i + 1}`)).join('')}--b--\r\n`;

type Attachment = { id: string; filename: string; safeFilename?: string };
const sent = NAMES.map(([n]) => n.trim());
const safe = NAMES.map(([, s]) => s);

describe.each(backends)('attachment names ($name)', (backend) => {
  let api: TestApi;
  let u: Awaited<ReturnType<typeof seedUsers>>;
  let inbox: string;
  let archive: string;
  let uid: string;
  const get = async (path: string) => {
    const r = await api.call('GET', path, { token: u.alice });
    expect(r.status, `${path}: ${JSON.stringify(r.body)}`).toBe(200);
    return r.body;
  };
  /** The names of one answer's attachments: as sent (trimmed by the MIME parser) and safe. */
  const names = (m: { attachments: Attachment[] }) => ({
    filename: m.attachments.map((a) => a.filename.trim()),
    safeFilename: m.attachments.map((a) => a.safeFilename),
  });

  beforeAll(async () => {
    api = await startTestApi(backend);
    u = await seedUsers(api);
    const folders = await get(`/api/mail/folders?mailboxUid=${u.aliceBox.uid}`);
    inbox = folders.find((f: { role: string }) => f.role === 'inbox').uid;
    archive = folders.find((f: { role: string }) => f.role === 'archive').uid;
    uid = (await deliverRaw(api, u.aliceBox.uid, RAW)).uid;
  });
  afterAll(async () => api?.close());

  it('the record, the folder listing and search give the name as sent and the safe one', async () => {
    const one = await get(`/api/mail/messages/${uid}`);
    expect(names(one)).toEqual({ filename: sent, safeFilename: safe });
    const [listed] = await get(`/api/mail/messages?folderUid=${inbox}`);
    expect(names(listed)).toEqual({ filename: sent, safeFilename: safe });
    const [found] = await get(`/api/mail/search?mailboxUid=${u.aliceBox.uid}&q=names`);
    expect(names(found)).toEqual({ filename: sent, safeFilename: safe });
    // Stored too, so every reader of the record has it.
    const stored = (await api.deps.store.repo<{ attachments: Attachment[] }>(MessageModel).get(uid))!;
    expect(stored.attachments.map((a) => a.safeFilename)).toEqual(safe);
  });

  it("copy, move and Deleted Items answer with the safe names, and the copy's event carries them", async () => {
    const events: EntityEvent[] = [];
    const off = api.deps.events.subscribe(archive, (_ch, e) => void events.push(e));
    try {
      const copy = await api.call('POST', `/api/mail/messages/${uid}/copy`, { token: u.alice, body: { folderUid: archive } });
      expect(copy.status).toBe(201);
      expect(names(copy.body)).toEqual({ filename: sent, safeFilename: safe });
      expect(copy.body).not.toHaveProperty('ingestKey');
      const created = events.find((e) => e.type === 'message' && e.action === 'create') as
        { data: { attachments: Attachment[] } } | undefined;
      expect(created && names(created.data)).toEqual({ filename: sent, safeFilename: safe });
      expect(created?.data).not.toHaveProperty('ingestKey');
      const moved = await api.call('POST', `/api/mail/messages/${copy.body.uid}/move`, { token: u.alice, body: { folderUid: inbox } });
      expect(moved.status).toBe(200);
      expect(names(moved.body)).toEqual({ filename: sent, safeFilename: safe });
      const trashed = await api.call('POST', `/api/mail/messages/${copy.body.uid}/trash`, { token: u.alice });
      expect(trashed.status).toBe(200);
      expect(names(trashed.body)).toEqual({ filename: sent, safeFilename: safe });
    } finally {
      off();
    }
  });

  it('a record filed before safe names were stored gets them in every answer', async () => {
    const repo = api.deps.store.repo<{ attachments: Attachment[] }>(MessageModel);
    const old = await deliverRaw(api, u.aliceBox.uid, RAW.replace('<names@', '<old-names@'));
    const rec = (await repo.get(old.uid))!;
    await repo.update(old.uid, { attachments: rec.attachments.map(({ safeFilename: _s, ...a }) => a) as Attachment[] });
    expect(((await repo.get(old.uid))!.attachments[0] as Attachment).safeFilename).toBeUndefined();
    expect(names(await get(`/api/mail/messages/${old.uid}`))).toEqual({ filename: sent, safeFilename: safe });
    const listed = (await get(`/api/mail/messages?folderUid=${inbox}`)).find((m: { uid: string }) => m.uid === old.uid);
    expect(names(listed)).toEqual({ filename: sent, safeFilename: safe });
    const copy = await api.call('POST', `/api/mail/messages/${old.uid}/copy`, { token: u.alice, body: { folderUid: archive } });
    expect(names(copy.body)).toEqual({ filename: sent, safeFilename: safe });
  });

  it('downloads are named with the safe name', async () => {
    for (const [i, name] of safe.entries()) {
      const r = await fetch(`${api.url}/api/mail/messages/${uid}/attachments/${i + 1}`, {
        headers: { authorization: `Bearer ${u.alice}` },
      });
      expect(r.status).toBe(200);
      expect(await r.text()).toBe(`file ${i + 1}`);
      const cd = r.headers.get('content-disposition') ?? '';
      expect(cd, name).toMatch(/^attachment; filename=/);
      // Express writes non-ASCII names as filename*=UTF-8''… (percent-encoded): decode what a browser saves.
      const star = /filename\*=UTF-8''([^;]+)/.exec(cd)?.[1];
      const plain = /filename=(?:"([^"]*)"|([^;\s]+))/
        .exec(cd)!
        .slice(1)
        .find((x) => x !== undefined);
      expect(star ? decodeURIComponent(star) : plain, cd).toBe(name);
      expect(cd).not.toMatch(/%E2%80%AE|\.\.|%2F|%5C|\\/i);
    }
  });

  it('the OpenAPI document lists safeFilename beside filename', async () => {
    const doc = await get('/api/openapi/json');
    const schema = doc.paths['/api/mail/messages/{id}'].get.responses['200'].content['application/json'].schema;
    const resolved = schema.$ref ? doc.components.schemas[schema.$ref.split('/').pop()] : schema;
    const items = resolved.properties.attachments.items;
    expect(Object.keys(items.properties)).toEqual(expect.arrayContaining(['filename', 'safeFilename']));
    expect(items.required).toContain('safeFilename');
  });
});
