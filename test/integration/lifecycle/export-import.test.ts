// Data export and mailbox import over real HTTP on SQLite and PostgreSQL: an export of a mailbox,
// imported into a fresh mailbox, reproduces its folders, counts, flags and raw messages byte for
// byte (S/MIME ciphertext untouched); a bad message in the middle of an mbox is reported and the
// rest imported; importing again skips every duplicate; only the owner downloads; expiry deletes.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import yazl from 'yazl';
import {
  exportPath,
  ExportRequestModel,
  ImportRequestModel,
  manifestSchema,
  runLifecycleRound,
  uploadPath,
  type ExportRequest,
} from '../../../lib/lifecycle/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { deliverRaw } from '../../helpers/messages.js';
import { ingestFixture, type IngestFixture } from '../ingest/setup.js';
import { download, drain, lifecycleDeps, sha, unzip, upload } from './helpers.js';

const backends = await sqlBackends();

const SMIME = Buffer.concat([
  Buffer.from(
    'From: bob@example.test\r\nTo: alice@example.test\r\nSubject: sealed\r\nMessage-ID: <sealed@example.test>\r\nMIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data; name="smime.p7m"\r\nContent-Transfer-Encoding: binary\r\n\r\n',
  ),
  Buffer.from(Array.from({ length: 2048 }, (_, i) => (i * 131 + 7) % 256)),
]);
const mail = (n: number, extra = '', body = `Body ${n}.\n`) =>
  `From: "Carol ${n}" <carol@example.net>\nTo: alice@example.test\nSubject: Hello ${n}\nDate: Sun, 22 Nov 2026 10:${String(n).padStart(2, '0')}:00 +0000\n${extra}\n${body}`;
type Msg = { uid: string; folderUid: string; blobId: string; seen: boolean; flagged: boolean; labels: string[]; size: number };

describe.each(backends)('data export and mailbox import on $name', (backend) => {
  let fx: IngestFixture;
  let p: IngestFixture['users'];
  let dave: string;
  let daveBox: string;
  let carol: string;
  let zip: Buffer;
  let exportUid: string;
  const api = () => fx.api;
  const tree = async (token: string, mailboxUid: string) => {
    const folders: Array<{ uid: string; name: string; parentUid: string | null; totalCount: number; unreadCount: number }> = (
      await api().call('GET', `/api/mail/folders?mailboxUid=${mailboxUid}&limit=1000`, { token })
    ).body;
    const path = (f: (typeof folders)[number]): string =>
      f.parentUid ? `${path(folders.find((x) => x.uid === f.parentUid)!)}/${f.name}` : f.name;
    const messages: Msg[] = (await api().call('GET', `/api/mail/messages?mailboxUid=${mailboxUid}&limit=1000`, { token })).body;
    const labels: Array<{ uid: string; name: string }> = (await api().call('GET', `/api/mail/labels?mailboxUid=${mailboxUid}`, { token }))
      .body;
    const byUid = new Map(folders.map((f) => [f.uid, path(f)]));
    return {
      folders: Object.fromEntries(folders.map((f) => [path(f), { total: f.totalCount, unread: f.unreadCount }])),
      messages: messages
        .map(
          (m) =>
            `${byUid.get(m.folderUid)}|${m.blobId}|seen=${m.seen}|flagged=${m.flagged}|${m.labels.map((l) => labels.find((x) => x.uid === l)?.name).join(',')}`,
        )
        .sort(),
      list: messages,
    };
  };

  /** The mailbox's calendar, contacts, notes and tasks without record ids and times, comparable across mailboxes. */
  const pim = async (token: string, mailboxUid: string) => {
    const get = async (resource: string, sort: string) =>
      (await api().call('GET', `/api/mail/${resource}?mailboxUid=${mailboxUid}&limit=1000&sort=${sort}`, { token })).body as Array<
        Record<string, unknown>
      >;
    const bare = (r: Record<string, unknown>): Record<string, unknown> => {
      const { uid: _u, mailboxUid: _m, version: _v, createdAt: _c, updatedAt: _up, acl: _a, ...rest } = r;
      return rest;
    };
    const lists = await get('task-lists', 'name');
    return {
      // The RRULE comes back with its parts in ical.js's order (FREQ=WEEKLY;COUNT=10;BYDAY=MO): the same rule.
      events: (await get('calendar-events', 'start')).map((e): Record<string, unknown> => ({
        ...bare(e),
        rrule: typeof e.rrule === 'string' ? e.rrule.split(';').sort().join(';') : e.rrule,
      })),
      contacts: (await get('contacts', 'fn')).map(bare),
      notes: (await get('notes', 'title')).map(bare),
      lists: lists.map(bare),
      tasks: (await get('tasks', 'title')).map((t) => ({ ...bare(t), taskListUid: lists.find((l) => l.uid === t.taskListUid)?.name })),
    };
  };

  beforeAll(async () => {
    fx = await ingestFixture(backend);
    p = fx.users;
    const a = p.alice;
    const box = p.aliceBox.uid;
    const projects = (await api().call('POST', '/api/mail/folders', { token: a, body: { mailboxUid: box, name: 'Projects' } })).body;
    const y2026 = (
      await api().call('POST', '/api/mail/folders', { token: a, body: { mailboxUid: box, name: '2026', parentUid: projects.uid } })
    ).body;
    const label = (await api().call('POST', '/api/mail/labels', { token: a, body: { mailboxUid: box, name: 'Important' } })).body;
    await deliverRaw(api(), box, mail(1, 'Message-ID: <m1@example.net>\n', 'From the start of a line.\n>From quoted.\n'));
    await deliverRaw(api(), box, Buffer.from('From: x@example.net\nSubject: no final newline\nMessage-ID: <m2@example.net>\n\nno newline'));
    await deliverRaw(api(), box, SMIME);
    const m4 = await deliverRaw(api(), box, mail(4, 'Message-ID: <m4@example.net>\n'), {
      folderUid: projects.uid,
      flags: { seen: true, flagged: true },
      labels: [label.uid],
    });
    await deliverRaw(api(), box, mail(5, 'Message-ID: <m5@example.net>\n'), { folderUid: y2026.uid });
    await deliverRaw(api(), box, mail(6, ''), { folderRole: 'archive' }); // no Message-ID
    await deliverRaw(api(), box, mail(4, 'Message-ID: <m4@example.net>\n'), { folderRole: 'archive', idempotencyKey: 'copy-of-4' }); // same Message-ID, another folder
    expect(m4.seen).toBe(true);
    await api().call('POST', '/api/mail/calendar-events', {
      token: a,
      body: { mailboxUid: box, summary: 'Team sync', start: '2026-12-01T10:00:00Z', end: '2026-12-01T11:00:00Z' },
    });
    await api().call('POST', '/api/mail/contacts', {
      token: a,
      body: { mailboxUid: box, fn: 'Erin Example', emails: [{ type: 'work', value: 'erin@example.net' }] },
    });
    // The rest of the personal information an export carries and an import restores.
    const series = (
      await api().call('POST', '/api/mail/calendar-events', {
        token: a,
        body: {
          mailboxUid: box,
          summary: 'Standup',
          start: '2026-12-07T08:30:00Z',
          end: '2026-12-07T08:45:00Z',
          timeZone: 'Europe/Berlin',
          rrule: 'FREQ=WEEKLY;BYDAY=MO;COUNT=10',
          exdates: ['2026-12-28T08:30:00Z'],
          organizer: { email: 'alice@example.test' },
          attendees: [{ email: 'frank@example.net', name: 'Frank', partstat: 'accepted' }],
          reminders: [{ minutesBefore: 10 }],
        },
      })
    ).body;
    expect(series.uid).toBeTruthy();
    await api().call('POST', '/api/mail/calendar-events', {
      token: a,
      body: {
        mailboxUid: box,
        icalUid: series.icalUid,
        recurrenceId: '2026-12-14T08:30:00Z',
        summary: 'Standup (moved)',
        start: '2026-12-14T10:00:00Z',
        end: '2026-12-14T10:15:00Z',
        timeZone: 'Europe/Berlin',
      },
    });
    await api().call('POST', '/api/mail/contacts', {
      token: a,
      body: {
        mailboxUid: box,
        vcardUid: 'urn:uuid:6f1c6d0e-1111-4a5b-9c2d-000000000001',
        fn: 'Gus Grant',
        givenName: 'Gus',
        familyName: 'Grant',
        phones: [{ type: 'cell', value: '+49 30 1234567' }],
        org: 'Grant & Co',
        birthday: '1980-02-29',
        categories: ['clients'],
      },
    });
    await api().call('POST', '/api/mail/notes', {
      token: a,
      body: { mailboxUid: box, title: 'Wi-Fi', body: 'guest / correct horse', pinned: true, color: '#ffcc00' },
    });
    const chores = (await api().call('POST', '/api/mail/task-lists', { token: a, body: { mailboxUid: box, name: 'Chores' } })).body;
    await api().call('POST', '/api/mail/tasks', {
      token: a,
      body: { mailboxUid: box, taskListUid: chores.uid, title: 'Renew domain', due: '2026-12-31T00:00:00Z', priority: 'high' },
    });
    await api().call('POST', '/api/mail/tasks', {
      token: a,
      body: { mailboxUid: box, taskListUid: chores.uid, title: 'Rotate DKIM key', completed: true },
    });
    dave = await api().token({ uid: 'dave', roles: [] });
    carol = await api().token({ uid: 'carol', roles: [] });
    daveBox = (
      await api().call('POST', '/api/mail/mailboxes', { token: p.admin, body: { address: 'dave@example.test', owners: ['dave'] } })
    ).body.uid;
    await api().call('POST', '/api/acls', {
      token: a,
      body: { resource: 'mailboxes', resourceUid: box, subject: 'user:carol', rights: ['read'] },
    });
  }, 120_000);
  afterAll(async () => fx?.close());

  it('the owner asks for an export; others cannot see, start or download it', async () => {
    const box = p.aliceBox.uid;
    expect((await api().call('POST', '/api/mail/data-export-requests', { token: p.bob, body: { mailboxUid: box } })).status).toBe(404);
    expect((await api().call('POST', '/api/mail/data-export-requests', { token: p.admin, body: { mailboxUid: box } })).status).toBe(404);
    expect((await api().call('POST', '/api/mail/data-export-requests', { token: carol, body: { mailboxUid: box } })).body.code).toBe(
      'api-102',
    );
    const r = await api().call('POST', '/api/mail/data-export-requests', { token: p.alice, body: { mailboxUid: box } });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ state: 'pending', initiatedBy: 'owner', requestedBy: 'alice', download: null });
    exportUid = r.body.uid;
    expect((await api().call('POST', '/api/mail/data-export-requests', { token: p.alice, body: { mailboxUid: box } })).body.code).toBe(
      'api-120',
    );
    expect((await api().call('GET', `/api/mail/data-export-requests/${exportUid}`, { token: p.bob })).status).toBe(404);
    expect((await api().call('GET', `/api/mail/data-export-requests/${exportUid}`, { token: p.admin })).status).toBe(404);
    expect((await download(api(), p.alice, `/api/mail/data-export-requests/${exportUid}/archive`)).json().code).toBe('api-120');
  });

  it('the worker builds the archive: an mbox per folder, raw bytes kept, ICS, vCard, manifest', async () => {
    const round = await drain(api());
    expect(round).toMatchObject({ exports: 1, failed: 0 });
    const rec = (await api().call('GET', `/api/mail/data-export-requests/${exportUid}`, { token: p.alice })).body;
    expect(rec).toMatchObject({
      state: 'ready',
      messages: 7,
      folders: 9,
      calendarEvents: 3,
      contacts: 2,
      progress: { done: 7, total: 7 },
      download: `/api/mail/data-export-requests/${exportUid}/archive`,
    });
    expect(new Date(rec.expiresAt).getTime() - Date.now()).toBeGreaterThan(167 * 3_600_000);
    for (const who of [p.bob, p.admin]) expect((await download(api(), who, rec.download)).status).toBe(404);
    expect((await download(api(), carol, rec.download)).json().code).toBe('api-102');
    const got = await download(api(), p.alice, rec.download);
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('application/zip');
    expect(sha(got.buf)).toBe(rec.archiveSha256);
    expect(sha(readFileSync(exportPath(api().config, exportUid)))).toBe(rec.archiveSha256);
    zip = got.buf;
    const files = await unzip(zip);
    const manifest = manifestSchema.parse(JSON.parse(files.get('manifest.json')!.toString()));
    expect(manifest.folders.map((f) => f.path.join('/'))).toEqual([
      'Inbox',
      'Drafts',
      'Sent Items',
      'Deleted Items',
      'Junk',
      'Outbox',
      'Archive',
      'Projects',
      'Projects/2026',
    ]);
    const inbox = manifest.folders[0];
    expect(inbox.messages.map((m) => m.sha256)).toContain(sha(SMIME));
    expect(inbox.messages.find((m) => m.sha256 === sha(SMIME))!.smime).toBe('encrypted');
    const mbox = files.get(inbox.file)!;
    expect(mbox.includes(SMIME.subarray(200))).toBe(true); // ciphertext as stored, not re-encoded
    expect(mbox.toString('latin1')).toContain('\r\n>From the start of a line.\r\n>>From quoted.');
    expect(files.get('calendar.ics')!.toString()).toContain('SUMMARY:Team sync');
    expect(files.get('contacts.vcf')!.toString()).toContain('FN:Erin Example');
    const audit = await api()
      .deps.store.repo(AuditEntryModel)
      .list({ filter: { action: 'data-export-requests.download', resourceUid: exportUid } });
    expect(audit.map((e) => (e as unknown as { actor: string }).actor)).toEqual(['alice']);
  });

  it('importing the export into a fresh mailbox reproduces folders, counts, flags and raw bytes', async () => {
    expect((await upload(api(), p.alice, { mailboxUid: daveBox }, zip, 'application/zip')).status).toBe(404);
    const up = await upload(api(), dave, { mailboxUid: daveBox }, zip, 'application/zip');
    expect(up.status).toBe(201);
    expect(up.body).toMatchObject({ state: 'pending', format: 'zip', uploadBytes: zip.length, mailboxUid: daveBox });
    await drain(api());
    const rec = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(rec).toMatchObject({ state: 'completed', imported: 7, skipped: 0, failed: 0, foldersCreated: 2, report: [] });
    const before = await tree(p.alice, p.aliceBox.uid);
    const after = await tree(dave, daveBox);
    expect(after.folders).toEqual(before.folders);
    expect(after.messages).toEqual(before.messages);
    for (const m of after.list) {
      const raw = await download(api(), dave, `/api/mail/messages/${m.uid}/raw`);
      expect(sha(raw.buf)).toBe(m.blobId);
    }
    const box = (await api().call('GET', `/api/mail/mailboxes/${daveBox}`, { token: dave })).body;
    expect(box.usedBytes).toBe(after.list.reduce((n, m) => n + m.size, 0));
    // Calendar (the series, its exception, time zone, attendees, reminders), contacts, notes and tasks come back too.
    const ok = (imported: number) => ({ imported, skipped: 0, failed: 0 });
    expect(rec.pim).toEqual({ calendarEvents: ok(3), contacts: ok(2), notes: ok(1), taskLists: ok(1), tasks: ok(2) });
    const theirs = await pim(p.alice, p.aliceBox.uid);
    const mine = await pim(dave, daveBox);
    expect(mine).toEqual(theirs);
    expect(mine.events.map((e) => e.summary)).toEqual(['Team sync', 'Standup', 'Standup (moved)']);
    expect(mine.events[1]).toMatchObject({
      rrule: 'BYDAY=MO;COUNT=10;FREQ=WEEKLY',
      timeZone: 'Europe/Berlin',
      attendees: [{ email: 'frank@example.net', partstat: 'accepted' }],
      reminders: [{ minutesBefore: 10 }],
    });
    expect(mine.tasks).toEqual([
      expect.objectContaining({ title: 'Renew domain', taskListUid: 'Chores' }),
      expect.objectContaining({ title: 'Rotate DKIM key', completed: true, completedAt: expect.any(String) }),
    ]);
    const occ = async (token: string, mailboxUid: string) =>
      (
        (
          await api().call(
            'GET',
            `/api/mail/calendar-events/occurrences?mailboxUid=${mailboxUid}&from=2026-12-01T00:00:00Z&to=2027-03-01T00:00:00Z`,
            { token },
          )
        ).body as Array<{ summary: string; start: string }>
      ).map((o) => `${o.start} ${o.summary}`);
    expect(await occ(dave, daveBox)).toEqual(await occ(p.alice, p.aliceBox.uid));
    expect(await occ(dave, daveBox)).toContain('2026-12-14T10:00:00.000Z Standup (moved)');
  });

  it('a second import of the same archive skips every message as a duplicate', async () => {
    const up = await upload(api(), dave, { mailboxUid: daveBox }, zip, 'application/octet-stream');
    expect(up.body.format).toBe('zip');
    await drain(api());
    const rec = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(rec).toMatchObject({ state: 'completed', imported: 0, skipped: 7, failed: 0 });
    expect(rec.report[0].reason).toMatch(/^duplicate/);
    expect((await api().call('HEAD', `/api/mail/messages?mailboxUid=${daveBox}`, { token: dave })).headers.get('x-total-count')).toBe('7');
    const skipped = (n: number) => ({ imported: 0, skipped: n, failed: 0 });
    expect(rec.pim).toEqual({
      calendarEvents: skipped(3),
      contacts: skipped(2),
      notes: skipped(1),
      taskLists: skipped(1),
      tasks: skipped(2),
    });
    expect(rec.report).toEqual(
      expect.arrayContaining([
        { index: 1, entry: 'calendar.ics #2', reason: expect.stringMatching(/^duplicate: the calendar already has the event /) },
        { index: 0, entry: 'contacts.vcf #1', reason: 'duplicate: the contact Erin Example is already in the mailbox' },
        {
          index: 0,
          entry: 'tasks.json taskLists #1',
          reason: 'duplicate: the task list Chores is already in the mailbox; its tasks join it',
        },
      ]),
    );
    expect((await pim(dave, daveBox)).events).toHaveLength(3);
  });

  it('a bad message in the middle of an mbox is reported; the others land in the chosen folder', async () => {
    const folder = (await api().call('POST', '/api/mail/folders', { token: dave, body: { mailboxUid: daveBox, name: 'Imported' } })).body;
    const mbox = [
      'From someone@example.net Sat Jan  3 10:00:00 2026',
      'From: a@example.net',
      'Subject: first',
      'Message-ID: <i1@example.net>',
      'Status: RO',
      '',
      'one',
      '',
      'From someone@example.net Sat Jan  3 10:00:00 2026',
      '\u0001\u0002 this is not a message at all',
      '',
      'From someone@example.net Sat Jan  3 10:00:00 2026',
      'From: c@example.net',
      'Subject: third',
      'Message-ID: <i3@example.net>',
      '',
      '>From the body',
      '',
      '',
    ].join('\n');
    const up = await upload(api(), dave, { mailboxUid: daveBox, folderUid: folder.uid }, mbox, 'application/mbox');
    expect(up.status).toBe(201);
    await drain(api());
    const rec = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(rec).toMatchObject({
      state: 'completed',
      imported: 2,
      skipped: 0,
      failed: 1,
      bytesRead: Buffer.byteLength(mbox),
      uploadBytes: Buffer.byteLength(mbox),
    });
    expect(rec.report).toEqual([{ index: 1, entry: 'mbox #2', reason: expect.stringMatching(/not an RFC 5322 message/) }]);
    expect((await api().call('GET', `/api/mail/folders/${folder.uid}`, { token: dave })).body).toMatchObject({
      totalCount: 2,
      unreadCount: 1,
    });
    const msgs: Array<{ uid: string; subject: string; seen: boolean }> = (
      await api().call('GET', `/api/mail/messages?folderUid=${folder.uid}&sort=subject`, { token: dave })
    ).body;
    expect(msgs.map((m) => [m.subject, m.seen])).toEqual([
      ['first', true],
      ['third', false],
    ]);
    expect((await download(api(), dave, `/api/mail/messages/${msgs[1].uid}/raw`)).buf.toString()).toBe(
      'From: c@example.net\nSubject: third\nMessage-ID: <i3@example.net>\n\nFrom the body\n',
    );
  });

  it('a zip of .eml files and a single .eml: each message on its own, duplicates skipped', async () => {
    const z = new yazl.ZipFile();
    z.addBuffer(Buffer.from('From: z@example.net\r\nSubject: zipped\r\nMessage-ID: <z1@example.net>\r\n\r\nfrom a zip\r\n'), 'old/one.eml');
    z.addBuffer(Buffer.from('garbage without any header\n'), 'two.eml');
    z.addBuffer(Buffer.from('From: a@example.net\nSubject: first again\nMessage-ID: <i1@example.net>\n\none\n'), 'three.eml');
    z.addBuffer(Buffer.from('resource fork'), '__MACOSX/old/._one.eml');
    z.end();
    const parts: Buffer[] = [];
    for await (const c of z.outputStream) parts.push(c as Buffer);
    const up = await upload(api(), dave, { mailboxUid: daveBox }, Buffer.concat(parts), 'application/zip');
    await drain(api());
    const rec = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(rec).toMatchObject({ state: 'completed', imported: 1, skipped: 1, failed: 1 });
    expect(rec.report).toEqual([
      { index: 1, entry: 'two.eml', reason: expect.stringMatching(/not an RFC 5322 message/) },
      { index: 2, entry: 'three.eml', reason: 'duplicate: Message-ID <i1@example.net> is already in the mailbox' },
    ]);
    const one = await upload(
      api(),
      dave,
      { mailboxUid: daveBox },
      'From: e@example.net\r\nSubject: single\r\n\r\njust one\r\n',
      'message/rfc822',
    );
    expect(one.body.format).toBe('eml');
    await drain(api());
    expect((await api().call('GET', `/api/mail/mailbox-import-requests/${one.body.uid}`, { token: dave })).body).toMatchObject({
      state: 'completed',
      imported: 1,
    });
    const inbox = (await api().call('GET', `/api/mail/messages?mailboxUid=${daveBox}&subject=single`, { token: dave })).body;
    expect(sha((await download(api(), dave, `/api/mail/messages/${inbox[0].uid}/raw`)).buf)).toBe(
      sha('From: e@example.net\r\nSubject: single\r\n\r\njust one\r\n'),
    );
  });

  it('two workers never run the same import; a run restarted after a worker died files nothing twice', async () => {
    const mbox = [1, 2]
      .map(
        (n) =>
          `From r@example.net Sat Jan  3 10:00:00 2026\nFrom: r@example.net\nSubject: restart ${n}\nMessage-ID: <r${n}@example.net>\n\nbody\n\n`,
      )
      .join('');
    const up = await upload(api(), dave, { mailboxUid: daveBox }, mbox, 'application/mbox');
    const file = uploadPath(api().config, up.body.uid);
    const saved = readFileSync(file);
    const count = async () =>
      Number((await api().call('HEAD', `/api/mail/messages?mailboxUid=${daveBox}`, { token: dave })).headers.get('x-total-count'));
    const before = await count();
    const [w1, w2] = await Promise.all([runLifecycleRound(lifecycleDeps(api()), 'w1'), runLifecycleRound(lifecycleDeps(api()), 'w2')]);
    expect(w1.imports + w2.imports).toBe(1);
    expect(await count()).toBe(before + 2);
    expect(existsSync(file)).toBe(false); // a finished import drops its upload
    // As if the worker had died after filing but before recording the outcome: lease run out, upload still there.
    writeFileSync(file, saved);
    await api()
      .deps.store.repo(ImportRequestModel)
      .updateMany({ uid: up.body.uid }, {
        state: 'running',
        claimedBy: 'dead-worker',
        leaseUntil: new Date(Date.now() - 1000),
        imported: 0,
      } as never);
    expect((await drain(api())).imports).toBe(1);
    expect((await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body).toMatchObject({
      state: 'completed',
      imported: 2,
      skipped: 0,
      failed: 0,
    });
    expect(await count()).toBe(before + 2);
  });

  it('calendar and contact files of a zip: a bad file or card is reported, the rest restored; a restarted run files nothing twice', async () => {
    const z = new yazl.ZipFile();
    z.addBuffer(Buffer.from('this is not iCalendar'), 'broken.ics');
    z.addBuffer(
      Buffer.from(
        [
          'BEGIN:VCALENDAR',
          'VERSION:2.0',
          'PRODID:-//Test//EN',
          'BEGIN:VEVENT',
          'UID:zip-1@example.net',
          'DTSTAMP:20261101T000000Z',
          'DTSTART:20270105T090000Z',
          'DTEND:20270105T100000Z',
          'SUMMARY:From a zip',
          'END:VEVENT',
          'BEGIN:VEVENT',
          'DTSTAMP:20261101T000000Z',
          'DTSTART:20270106T090000Z',
          'SUMMARY:No UID',
          'END:VEVENT',
          'END:VCALENDAR',
          '',
        ].join('\r\n'),
      ),
      'cal/work.ics',
    );
    z.addBuffer(
      Buffer.from(
        [
          'BEGIN:VCARD',
          'VERSION:3.0',
          'FN:Hana Zip',
          'N:Zip;Hana;;;',
          'EMAIL;TYPE=INTERNET:hana@example.net',
          'END:VCARD',
          'BEGIN:VCARD',
          'VERSION:3.0',
          'EMAIL:nobody@example.net',
          'END:VCARD',
          '',
        ].join('\r\n'),
      ),
      'people.vcf',
    );
    z.addBuffer(Buffer.from('[{"title":"not restored"}]'), 'notes.json'); // not an export: only its .ics/.vcf files are personal information
    z.end();
    const parts: Buffer[] = [];
    for await (const c of z.outputStream) parts.push(c as Buffer);
    const body = Buffer.concat(parts);
    const before = await pim(dave, daveBox);
    const up = await upload(api(), dave, { mailboxUid: daveBox }, body, 'application/zip');
    await drain(api());
    const rec = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(rec).toMatchObject({ state: 'completed', imported: 0, failed: 0 });
    expect(rec.pim).toMatchObject({
      calendarEvents: { imported: 1, skipped: 0, failed: 2 },
      contacts: { imported: 1, skipped: 0, failed: 1 },
      notes: { imported: 0, failed: 0 },
    });
    expect(rec.report).toEqual([
      { index: 0, entry: 'broken.ics', reason: expect.stringMatching(/^not valid iCalendar/) },
      { index: 1, entry: 'cal/work.ics #2', reason: expect.stringMatching(/cannot be stored/) },
      { index: 1, entry: 'people.vcf #2', reason: expect.stringMatching(/FN/) },
    ]);
    const after = await pim(dave, daveBox);
    expect(after.events.length).toBe(before.events.length + 1);
    expect(after.contacts.length).toBe(before.contacts.length + 1);
    expect(after.notes).toEqual(before.notes);
    expect(after.events).toContainEqual(
      expect.objectContaining({ icalUid: 'zip-1@example.net', summary: 'From a zip', start: '2027-01-05T09:00:00.000Z' }),
    );
    expect(after.contacts).toContainEqual(
      expect.objectContaining({ fn: 'Hana Zip', emails: [{ type: 'internet', value: 'hana@example.net' }] }),
    );
    // As if the worker had died after restoring but before recording the outcome.
    writeFileSync(uploadPath(api().config, up.body.uid), body);
    await api()
      .deps.store.repo(ImportRequestModel)
      .updateMany({ uid: up.body.uid }, { state: 'running', claimedBy: 'dead-worker', leaseUntil: new Date(Date.now() - 1000) } as never);
    expect((await drain(api())).imports).toBe(1);
    const again = (await api().call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: dave })).body;
    expect(again.pim).toMatchObject({
      calendarEvents: { imported: 1, skipped: 0, failed: 2 },
      contacts: { imported: 1, skipped: 0, failed: 1 },
    });
    expect(await pim(dave, daveBox)).toEqual(after);
  });

  it('an administrator starts an export only with fresh elevation, audited, and never downloads it', async () => {
    const stale = await api().token({ uid: 'root', roles: ['admin'], elevated: new Date(Date.now() - 3_600_000) });
    expect(
      (
        await api().call('POST', '/api/mail/data-export-requests/on-behalf', {
          token: stale,
          body: { mailboxUid: daveBox, reason: 'GDPR art. 20 request' },
        })
      ).body.code,
    ).toBe('api-104');
    expect(
      (await api().call('POST', '/api/mail/data-export-requests/on-behalf', { token: dave, body: { mailboxUid: daveBox, reason: 'x' } }))
        .body.code,
    ).toBe('api-103');
    const r = await api().call('POST', '/api/mail/data-export-requests/on-behalf', {
      token: p.admin,
      body: { mailboxUid: daveBox, reason: 'GDPR art. 20 request' },
    });
    expect(r.status).toBe(201);
    expect(r.body).toMatchObject({ state: 'pending', initiatedBy: 'admin', requestedBy: 'root', reason: 'GDPR art. 20 request' });
    expect(r.body).not.toHaveProperty('download');
    await drain(api());
    expect((await download(api(), p.admin, `/api/mail/data-export-requests/${r.body.uid}/archive`)).status).toBe(404);
    expect((await download(api(), dave, `/api/mail/data-export-requests/${r.body.uid}/archive`)).status).toBe(200);
    const listed = (await api().call('GET', `/api/mail/data-export-requests?scope=admin&mailboxUid=${daveBox}`, { token: p.admin })).body;
    expect(listed).toEqual([expect.objectContaining({ uid: r.body.uid, state: 'ready' })]);
    expect(listed[0]).not.toHaveProperty('archiveSha256');
    const audit = await api()
      .deps.store.repo(AuditEntryModel)
      .list({ filter: { action: 'data-export-requests.create.admin', resourceUid: r.body.uid } });
    expect(audit).toEqual([expect.objectContaining({ actor: 'root', details: { mailboxUid: daveBox, reason: 'GDPR art. 20 request' } })]);
  });

  it('expiry deletes the archive; the owner can delete a request and its file at any time', async () => {
    const repo = api().deps.store.repo<ExportRequest>(ExportRequestModel);
    await repo.update(exportUid, { expiresAt: new Date(Date.now() - 1000) });
    expect((await drain(api())).expired).toBeGreaterThanOrEqual(1);
    expect((await api().call('GET', `/api/mail/data-export-requests/${exportUid}`, { token: p.alice })).body.state).toBe('expired');
    expect(existsSync(exportPath(api().config, exportUid))).toBe(false);
    expect((await download(api(), p.alice, `/api/mail/data-export-requests/${exportUid}/archive`)).json().code).toBe('api-120');
    const [daves] = (await api().call('GET', `/api/mail/data-export-requests?mailboxUid=${daveBox}`, { token: dave })).body;
    expect(existsSync(exportPath(api().config, daves.uid))).toBe(true);
    expect(
      (await api().call('DELETE', `/api/mail/data-export-requests/${daves.uid}`, { token: dave, body: { version: daves.version } })).status,
    ).toBe(204);
    expect(existsSync(exportPath(api().config, daves.uid))).toBe(false);
  });
});

describe.each(backends)('import limits on $name', (backend) => {
  let fx: IngestFixture;
  beforeAll(async () => {
    fx = await ingestFixture(backend, {
      'mail:mailbox_import:max_upload_bytes': 20_000,
      'mail:mailbox_import:max_message_bytes': 2_000,
      'mail:mailbox_import:max_unpacked_bytes': 20_000,
    });
  }, 60_000);
  afterAll(async () => fx?.close());

  it('refuses an upload over the limit with 413 api-110 and stores nothing', async () => {
    const r = await upload(fx.api, fx.users.alice, { mailboxUid: fx.users.aliceBox.uid }, Buffer.alloc(30_000, 'a'), 'message/rfc822');
    expect(r).toMatchObject({ status: 413, body: { code: 'api-110', message: expect.stringMatching(/max_upload_bytes \(20000 bytes\)/) } });
    expect(
      (await fx.api.call('GET', `/api/mail/mailbox-import-requests?mailboxUid=${fx.users.aliceBox.uid}`, { token: fx.users.alice })).body,
    ).toEqual([]);
    expect((await upload(fx.api, fx.users.alice, { mailboxUid: fx.users.aliceBox.uid }, 'x', 'text/plain')).body.code).toBe('api-117');
    expect(
      (await upload(fx.api, fx.users.alice, { mailboxUid: fx.users.aliceBox.uid }, 'Subject: x\n\ny\n', 'application/zip')).body.code,
    ).toBe('api-106');
  });

  it('reports a message over the per-message limit and imports the rest', async () => {
    const one = (n: number, body: string) =>
      `From a@example.net Sat Jan  3 10:00:00 2026\nFrom: a@example.net\nSubject: s${n}\nMessage-ID: <l${n}@example.net>\n\n${body}\n\n`;
    const up = await upload(
      fx.api,
      fx.users.alice,
      { mailboxUid: fx.users.aliceBox.uid },
      one(1, 'small') + one(2, 'x'.repeat(5000)) + one(3, 'small'),
      'application/mbox',
    );
    await drain(fx.api);
    const rec = (await fx.api.call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: fx.users.alice })).body;
    expect(rec).toMatchObject({
      state: 'completed',
      imported: 2,
      failed: 1,
      report: [{ index: 1, reason: expect.stringMatching(/max_message_bytes \(2000 bytes\)/) }],
    });
  });

  it('calendar and contact files count against the unpacked limit: past it the rest is reported, not read', async () => {
    const ics = (n: number) =>
      [
        'BEGIN:VCALENDAR',
        'VERSION:2.0',
        'PRODID:-//Test//EN',
        'BEGIN:VEVENT',
        `UID:big-${n}@example.net`,
        'DTSTAMP:20261101T000000Z',
        'DTSTART:20270105T090000Z',
        'DTEND:20270105T100000Z',
        `SUMMARY:Big ${n}`,
        `DESCRIPTION:${'x'.repeat(12_000)}`,
        'END:VEVENT',
        'END:VCALENDAR',
        '',
      ].join('\r\n');
    const z = new yazl.ZipFile();
    z.addBuffer(Buffer.from(ics(1)), 'one.ics');
    z.addBuffer(Buffer.from(ics(2)), 'two.ics');
    z.end();
    const parts: Buffer[] = [];
    for await (const c of z.outputStream) parts.push(c as Buffer);
    const up = await upload(fx.api, fx.users.alice, { mailboxUid: fx.users.aliceBox.uid }, Buffer.concat(parts), 'application/zip');
    expect(up.status).toBe(201);
    await drain(fx.api);
    const rec = (await fx.api.call('GET', `/api/mail/mailbox-import-requests/${up.body.uid}`, { token: fx.users.alice })).body;
    expect(rec).toMatchObject({ state: 'completed', pim: { calendarEvents: { imported: 1, skipped: 0, failed: 1 } } });
    expect(rec.report).toEqual([
      { index: 0, entry: 'two.ics', reason: expect.stringMatching(/max_unpacked_bytes \(20000 bytes\); this and later calendar/) },
    ]);
    const events = (await fx.api.call('GET', `/api/mail/calendar-events?mailboxUid=${fx.users.aliceBox.uid}`, { token: fx.users.alice }))
      .body;
    expect(events.map((e: { summary: string }) => e.summary)).toEqual(['Big 1']);
  });
});
