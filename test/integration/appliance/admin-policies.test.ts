// Each svcmail run starts a process: the tests allow for a loaded machine.
// svcmail admin policies against the real api daemon: mailbox-policy and retention-policy are shown
// and changed from the command line (output, exit codes, stored state, audit), and a mailbox
// created without --quota gets the policy's default quota.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailboxPolicy, retentionPolicy } from '../../../lib/settings/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { MailboxModel } from '../../../lib/mail/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import type { Store } from '../../../lib/storage/index.js';
import { freePort } from '../../helpers/scanners.js';
import { setupArgs, startApiDaemon, svcmail } from './helpers.js';

describe('svcmail admin policies', () => {
  let dir: string;
  let api: Awaited<ReturnType<typeof startApiDaemon>>;
  let store: Store;
  let base: string[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-policies-'));
    const conf = join(dir, 'svcmail.conf');
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
    const port = await freePort();
    api = await startApiDaemon(conf, port);
    base = ['--config', conf, '--set', `listen:api=127.0.0.1:${port}`];
    store = await openSqlStore({
      url: `sqlite:${join(dir, 'data/svcmail.sqlite')}`,
      models: productModels(productRegistry()),
      synchronize: false,
    });
  }, 90_000);
  afterAll(async () => {
    await store?.close();
    await api?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('shows the defaults of mailbox-policy and retention-policy', async () => {
    const mp = await svcmail([...base, '--json', 'admin', 'policies', 'show', 'mailbox-policy']);
    expect(mp.code, mp.stderr).toBe(0);
    expect(mp.json()).toMatchObject({ defaultQuotaBytes: 0, maxAliases: 100, plusAddressing: true, version: 0 });
    const rp = await svcmail([...base, 'admin', 'policies', 'show', 'retention-policy']);
    expect(rp.code, rp.stderr).toBe(0);
    expect(rp.stdout).toMatch(/"junkDays": null/);
    expect(rp.stdout).toMatch(/policies: retention-policy shown$/m);
  }, 120_000);

  it('sets mailbox-policy fields; a new mailbox without --quota gets the default quota', async () => {
    const r = await svcmail([
      ...base,
      'admin',
      'policies',
      'set',
      'mailbox-policy',
      '--field',
      'defaultQuotaBytes=2147483648',
      '--field',
      'maxAliases=3',
    ]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/^policies: mailbox-policy updated$/m);
    expect(await store.repo(mailboxPolicy.model).findOne({ key: 'deployment' })).toMatchObject({
      defaultQuotaBytes: 2147483648,
      maxAliases: 3,
      plusAddressing: true,
      version: 1,
    });
    // A second change carries the version it read (the CLI reads first).
    const again = await svcmail([...base, '--json', 'admin', 'policies', 'set', 'mailbox-policy', '--field', 'plusAddressing=false']);
    expect(again.code, again.stderr).toBe(0);
    expect(again.json()).toMatchObject({ plusAddressing: false, maxAliases: 3, version: 2 });

    await svcmail([...base, 'admin', 'domains', 'update', 'example.test', '--field', 'verified=true']);
    const c = await svcmail([...base, 'admin', 'mailboxes', 'create', 'alice@example.test', '--owner', 'alice']);
    expect(c.code, c.stderr).toBe(0);
    const q = await svcmail([...base, 'admin', 'mailboxes', 'create', 'bob@example.test', '--owner', 'bob', '--quota', '1G']);
    expect(q.code, q.stderr).toBe(0);
    const boxes = store.repo<{ address: string; quotaBytes: number }>(MailboxModel);
    expect((await boxes.findOne({ address: 'alice@example.test' }))!.quotaBytes).toBe(2 * 2 ** 30);
    expect((await boxes.findOne({ address: 'bob@example.test' }))!.quotaBytes).toBe(2 ** 30);
    const tooMany = await svcmail([
      ...base,
      'admin',
      'mailboxes',
      'aliases',
      'alice@example.test',
      '--add',
      'a1@example.test',
      '--add',
      'a2@example.test',
      '--add',
      'a3@example.test',
      '--add',
      'a4@example.test',
    ]);
    expect(tooMany.code).toBe(65);
    expect(tooMany.stderr).toMatch(/400 api-106 .*at most 3 aliases/);
  }, 240_000);

  it('sets retention-policy ages; an invalid age exits 65 and changes nothing; every change is audited as the CLI', async () => {
    const r = await svcmail([
      ...base,
      'admin',
      'policies',
      'set',
      'retention-policy',
      '--field',
      'junkDays=30',
      '--field',
      'deletedDays=14',
    ]);
    expect(r.code, r.stderr).toBe(0);
    const bad = await svcmail([...base, 'admin', 'policies', 'set', 'retention-policy', '--field', 'inboxDays=0']);
    expect(bad.code).toBe(65);
    expect(bad.stderr).toMatch(/400 api-106/);
    const none = await svcmail([...base, 'admin', 'policies', 'set', 'retention-policy', '--field', 'deletedDays=null']);
    expect(none.code, none.stderr).toBe(0);
    expect(await store.repo(retentionPolicy.model).findOne({ key: 'deployment' })).toMatchObject({
      junkDays: 30,
      deletedDays: null,
      inboxDays: null,
      version: 2,
    });
    const audit = await store
      .repo<{ actor: string; action: string; before: Record<string, unknown>; after: Record<string, unknown> }>(AuditEntryModel)
      .list({ filter: { action: 'retention-policy.update' }, sort: [{ field: 'createdAt', dir: 'asc' }] });
    expect(audit).toHaveLength(2);
    expect(audit.map((a) => a.actor)).toEqual(['svcmail-cli', 'svcmail-cli']);
    expect(audit[1]).toMatchObject({ before: { deletedDays: 14 }, after: { deletedDays: null, junkDays: 30 } });
  }, 120_000);
});
