// The data the fault tests drive routes against: an api app (real HTTP, real database) with the
// store behind a fault decorator, alice's mailbox with a message carrying an attachment, a draft,
// and carol reading alice's mailbox through an ACL share. Made while the store is healthy.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { SettingName } from '../../lib/config/index.js';
import type { Logger } from '../../lib/log/index.js';
import { seedUsers, startTestApi, type TestApi } from '../helpers/api.js';
import type { Backend } from '../helpers/databases.js';
import { deliverRaw } from '../helpers/messages.js';
import { faultyStore, StoreFaults } from './faults.js';

export const INGEST_SECRET = 'reliability-ingest-secret-5e0c77';

export interface World {
  api: TestApi;
  faults: StoreFaults;
  dataDir: string;
  tokens: { alice: string; bob: string; carol: string; admin: string };
  ids: { mailbox: string; bobMailbox: string; inbox: string; message: string; draft: string; acl: string };
  close(): Promise<void>;
}

export const mustStatus = (what: string, r: { status: number; body: unknown }, want: number) => {
  if (r.status !== want) throw new Error(`${what}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body as { uid: string; version: number };
};

/** A message with an HTML attachment (the download checks) and a text part. */
export const MESSAGE_WITH_ATTACHMENT = [
  'From: Carol <carol@example.net>',
  'To: alice@example.test',
  'Subject: with attachment',
  'Message-ID: <att-1@example.net>',
  'MIME-Version: 1.0',
  'Content-Type: multipart/mixed; boundary=b',
  '',
  '--b',
  'Content-Type: text/plain',
  '',
  'See the page.',
  '--b',
  'Content-Type: text/html; name=page.html',
  'Content-Disposition: attachment; filename=page.html',
  '',
  '<html><body><script>alert(document.cookie)</script>hello</body></html>',
  '--b--',
  '',
].join('\r\n');

export async function startWorld(
  backend: Backend,
  values: Partial<Record<SettingName, unknown>> = {},
  opts: { log?: Logger } = {},
): Promise<World> {
  const faults = new StoreFaults();
  const dataDir = mkdtempSync(join(tmpdir(), 'svcmail-reliability-'));
  const api = await startTestApi(
    backend,
    {
      data_dir: dataDir,
      'mail:transport:ingest:secret': INGEST_SECRET,
      'mail:jobs:wake_address': '',
      ...values,
    },
    { wrapStore: (s) => faultyStore(s, faults), log: opts.log },
  );
  try {
    const p = await seedUsers(api);
    const carol = await api.token({ uid: 'carol', roles: [] });
    const folders = await api.call('GET', `/api/mail/folders?mailboxUid=${p.aliceBox.uid}`, { token: p.alice });
    const inbox = (folders.body as Array<{ uid: string; role: string }>).find((f) => f.role === 'inbox')!.uid;
    const message = (await deliverRaw(api, p.aliceBox.uid, MESSAGE_WITH_ATTACHMENT, { folderUid: inbox })).uid;
    const draft = mustStatus(
      'draft',
      await api.call('POST', '/api/mail/compose', {
        token: p.alice,
        body: { mailboxUid: p.aliceBox.uid, to: ['bob@example.test'], subject: 'draft', text: 'a draft' },
      }),
      201,
    ).uid;
    const acl = mustStatus(
      'share',
      await api.call('POST', '/api/acls', {
        token: p.alice,
        body: { resource: 'mailboxes', resourceUid: p.aliceBox.uid, subject: 'user:carol', rights: ['read'] },
      }),
      201,
    ).uid;
    return {
      api,
      faults,
      dataDir,
      tokens: { alice: p.alice, bob: p.bob, carol, admin: p.admin },
      ids: { mailbox: p.aliceBox.uid, bobMailbox: p.bobBox.uid, inbox, message, draft, acl },
      async close() {
        faults.clear();
        await api.close();
        rmSync(dataDir, { recursive: true, force: true });
      },
    };
  } catch (e) {
    await api.close();
    throw e;
  }
}
