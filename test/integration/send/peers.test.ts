// The send path against independent peers: a real private Postfix (Postfix's sendmail → Postfix →
// smtp-sink), real rspamd and clamd for the outbound scan, and mailauth verifying the DKIM signatures
// nodemailer made.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { dkimVerify } from 'mailauth/lib/dkim/verify.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordingOutbound, systemMessage, mailPort } from '../../../lib/ingest/index.js';
import { drainSends } from '../../../lib/jobs/send.js';
import { loadRaw, MessageModel, type Message } from '../../../lib/mail/index.js';
import { generateDkimKey } from '../../../lib/pki/index.js';
import { fileReport, jobUidOf, OutboundJobModel, sendDepsOf } from '../../../lib/send/index.js';
import { seedUsers, startTestApi, type TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { requirePrograms, requireRoot } from '../../helpers/peers.js';
import { startPostfix, type PostfixInstance } from '../../helpers/postfix.js';
import { EICAR, GTUBE, startScanners, type Scanners } from '../../helpers/scanners.js';
import { draft, folderByRole } from './helpers.js';

const ready = requirePrograms('postfix', 'rspamd', 'clamd') && requireRoot('a private Postfix instance');
const [backend] = await sqlBackends();

describe.runIf(ready)('send through real Postfix with real scanners, DKIM checked by mailauth', () => {
  let pf: PostfixInstance;
  let sc: Scanners;
  let api: TestApi;
  let txt: string;
  let dkimDir: string;
  let users: Awaited<ReturnType<typeof seedUsers>>;
  beforeAll(async () => {
    [pf, sc] = await Promise.all([startPostfix(), startScanners()]);
    const key = await generateDkimKey();
    txt = key.dnsTxt;
    dkimDir = mkdtempSync(join(tmpdir(), 'svcmail-send-dkim-'));
    writeFileSync(join(dkimDir, 'example.test.mail.key'), key.privateKeyPem, { mode: 0o600 });
    api = await startTestApi(backend, {
      'mail:transport:sendmail:path': pf.sendmail,
      'mail:transport:sendmail:log_path': join(pf.dir, 'maillog'),
      'mail:dkim:dir': dkimDir,
      'mail:scan:rspamd:url': sc.rspamdUrl,
      'mail:scan:clamd:address': sc.clamdAddress,
    });
    users = await seedUsers(api);
  }, 180_000);
  afterAll(async () => {
    await Promise.all([pf?.stop(), sc?.stop(), api?.close()]);
    rmSync(dkimDir, { recursive: true, force: true });
  });

  const resolver = async (name: string, type: string) => {
    if (type === 'TXT' && name === 'mail._domainkey.example.test') return [[txt]];
    const e = new Error('no such record') as NodeJS.ErrnoException;
    e.code = 'ENOTFOUND';
    throw e;
  };
  const drafts = async () => (await folderByRole(api.deps, users.aliceBox.uid, 'drafts')).uid;

  it('a synchronous send leaves through Postfix once, DKIM-signed for the From domain (mailauth: pass)', async () => {
    const d = await draft(api, users.aliceBox.uid, {
      from: 'Alice <alice@example.test>',
      to: ['carol@example.net'],
      subject: 'through postfix',
      messageId: '<via-postfix@example.test>',
    });
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} });
    expect(r.status).toBe(200);
    expect(r.body.accepted).toEqual(['carol@example.net']);
    const [relayed] = await pf.waitFor(1);
    expect(relayed.toString()).toContain('Message-ID: <via-postfix@example.test>');
    const v = await dkimVerify(relayed, { resolver });
    expect(v.results[0].status.result).toBe('pass');
    expect(v.results[0].signingDomain).toBe('example.test');
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'sent')).uid,
    );
  });

  it.each([
    ['GTUBE (rspamd rejects)', { body: `This is spam.\r\n${GTUBE}` }],
    ['EICAR (clamd finds it)', { body: EICAR }],
  ])('422 api-114 for %s; nothing leaves, the draft stays', async (_n, content) => {
    const before = pf.received().length;
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['victim@example.net'], ...content });
    const r = await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: {} });
    expect(r.status).toBe(422);
    expect(r.body.code).toBe('api-114');
    expect(await api.deps.store.repo(OutboundJobModel).get(jobUidOf(d.uid))).toBeNull();
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(await drafts());
    await new Promise((res) => setTimeout(res, 1500));
    expect(pf.received().length).toBe(before);
  });

  it('a background send that fails the scan is failed in the Outbox with send-failed', async () => {
    const d = await draft(api, users.aliceBox.uid, { from: 'alice@example.test', to: ['victim@example.net'], body: `spam ${GTUBE}` });
    expect((await api.call('POST', `/api/mail/messages/${d.uid}/send`, { token: users.alice, body: { background: true } })).status).toBe(
      202,
    );
    const events: string[] = [];
    api.deps.events.subscribe(users.aliceBox.uid, (_c, ev) => {
      events.push(ev.type);
    });
    await drainSends({ ...sendDepsOf(api.deps) }, 'w');
    const j = await api.deps.store.repo<{ state: string; lastError: string }>(OutboundJobModel).get(jobUidOf(d.uid));
    expect(j!.state).toBe('failed');
    expect(j!.lastError).toMatch(/spam/);
    expect(events).toContain('send-failed');
    expect((await api.deps.store.repo<Message>(MessageModel).get(d.uid))!.folderUid).toBe(
      (await folderByRole(api.deps, users.aliceBox.uid, 'outbox')).uid,
    );
  });

  it('mail the inbound path originates (an NDR hand-off) is relayed DKIM-signed; a filed DSN verifies too', async () => {
    const before = pf.received().length;
    const deps = sendDepsOf(api.deps);
    await recordingOutbound(api.deps, mailPort(api.deps)).send({
      id: 'ndr-peer-1',
      kind: 'ndr',
      envelopeFrom: '',
      envelopeTo: ['someone@example.net'],
      raw: systemMessage({
        from: 'MAILER-DAEMON@example.test',
        to: 'someone@example.net',
        subject: 'Undeliverable: hi',
        body: 'no such user',
      }),
    });
    await drainSends(deps, 'w');
    const all = await pf.waitFor(before + 1);
    const ndr = all.find((m) => m.toString().includes('Undeliverable: hi'))!;
    expect((await dkimVerify(ndr, { resolver })).results[0].status.result).toBe('pass');
    const dsnUid = await fileReport(api.deps, {
      mailboxUid: users.aliceBox.uid,
      to: 'alice@example.test',
      subject: 'x',
      messageId: '<x@example.test>',
      originalHeaders: 'Subject: x\r\n',
      refused: [{ rcpt: 'r@example.net', reason: 'refused', permanent: true }],
      key: 'peer-dsn',
    });
    const dsn = await api.deps.store.repo<Message>(MessageModel).get(dsnUid);
    expect((await dkimVerify(await loadRaw(api.deps, dsn!.blobId), { resolver })).results[0].status.result).toBe('pass');
  });
});
