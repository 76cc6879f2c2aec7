// svcmail admin against the real api daemon: output, exit codes, and the stored state.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../../lib/auth/index.js';
import { DomainModel } from '../../../lib/settings/index.js';
import { AuditEntryModel } from '../../../lib/audit/index.js';
import { DistributionListModel, IngestEntryModel, QuarantineModel, TransportRuleModel } from '../../../lib/ingest/models.js';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { loadConfig } from '../../../lib/config/index.js';
import { FolderModel, MailboxModel, MessageModel } from '../../../lib/mail/index.js';
import { EasDeviceModel } from '../../../lib/plugins/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import type { Store } from '../../../lib/storage/index.js';
import { freePort } from '../../helpers/scanners.js';
import { PROD_ENV, ROOT, setupArgs, startApiDaemon, svcmail } from './helpers.js';

// Every case runs the CLI several times: a loaded two-core machine needs time.
describe('svcmail admin', { timeout: 120_000 }, () => {
  let dir: string;
  let conf: string;
  let api: Awaited<ReturnType<typeof startApiDaemon>>;
  let store: Store;
  let base: string[];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'svcmail-admin-'));
    conf = join(dir, 'svcmail.conf');
    expect((await svcmail(setupArgs(dir, 'http://127.0.0.1:9'))).code).toBe(0);
    const port = await freePort();
    // DNS checks (domains verify) ask a port on loopback where nothing answers: no question leaves the machine.
    api = await startApiDaemon(conf, port, { SVCMAIL__mail__dns__check_nameservers: '["127.0.0.1:9"]' });
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

  it('lists and creates domains; a duplicate exits 73', async () => {
    const list = await svcmail([...base, '--json', 'admin', 'domains', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json().map((d: { name: string }) => d.name)).toEqual(['example.test']);
    const created = await svcmail([...base, 'admin', 'domains', 'create', 'other.test', '--field', 'aliases=["alias.test"]']);
    expect(created.code, created.stderr).toBe(0);
    expect(created.stdout).toMatch(/^domains: created other\.test \(uid [\w-]+\)$/m);
    const rec = await store.repo<{ name: string; aliases: string[] }>(DomainModel).findOne({ name: 'other.test' });
    expect(rec?.aliases).toEqual(['alias.test']);
    const dup = await svcmail([...base, 'admin', 'domains', 'create', 'other.test']);
    expect(dup.code).toBe(73);
    expect(dup.stderr).toMatch(/409 api-112/);
  });

  it('domains verify: without the MX it stays unverified (exit 1, the MX named); --force verifies it (audited) and inbound mail is accepted', async () => {
    const domain = (name: string) =>
      fetch(`${api.url}/internal/mta/domain?name=${name}`, {
        headers: { authorization: `Bearer ${JSON.parse(readFileSync(conf, 'utf8'))['mail:transport:ingest:secret']}` },
      }).then((r) => r.status);
    expect(await domain('example.test')).toBe(403); // setup records a domain unverified
    // the daemon asks 127.0.0.1:9, where no resolver answers: the MX cannot be found, the domain stays as it is
    const checked = await svcmail([...base, 'admin', 'domains', 'verify', 'example.test']);
    expect(checked.code).toBe(1);
    expect(checked.stdout).toMatch(/example\.test: NOT verified, inbound mail is refused until its MX record points here/);
    expect((await store.repo<{ verified: boolean }>(DomainModel).findOne({ name: 'example.test' }))?.verified).toBe(false);
    const forced = await svcmail([...base, '--json', 'admin', 'domains', 'verify', 'example.test', '--force']);
    expect(forced.code, forced.stderr).toBe(0);
    expect(forced.json()).toMatchObject({ name: 'example.test', verified: true });
    expect(await domain('example.test')).toBe(200);
    const audit = await store
      .repo<{ action: string; actor: string; resourceUid: string }>(AuditEntryModel)
      .list({ filter: { action: 'domains.update', resourceUid: forced.json().uid } });
    expect(audit.map((e) => e.actor)).toContain('svcmail-cli');
  });

  it('creates a mailbox, changes aliases and quota, and shows the admin view only', async () => {
    const c = await svcmail([
      ...base,
      'admin',
      'mailboxes',
      'create',
      'alice@example.test',
      '--owner',
      'alice',
      '--quota',
      '1G',
      '--name',
      'Alice',
    ]);
    expect(c.code, c.stderr).toBe(0);
    const a = await svcmail([
      ...base,
      'admin',
      'mailboxes',
      'aliases',
      'alice@example.test',
      '--add',
      'al@example.test',
      '--add',
      'ali@example.test',
    ]);
    expect(a.stdout).toMatch(/aliases now al@example\.test, ali@example\.test/);
    const q = await svcmail([...base, 'admin', 'mailboxes', 'quota', 'alice@example.test', '2G']);
    expect(q.code, q.stderr).toBe(0);
    const rec = await store
      .repo<{ address: string; aliases: string[]; quotaBytes: number; name: string }>(MailboxModel)
      .findOne({ address: 'alice@example.test' });
    expect(rec).toMatchObject({ aliases: ['al@example.test', 'ali@example.test'], quotaBytes: 2 * 2 ** 30, name: 'Alice' });

    const show = await svcmail([...base, '--json', 'admin', 'mailboxes', 'show', 'alice@example.test']);
    expect(Object.keys(show.json()).sort()).toEqual(['address', 'aliases', 'owners', 'quotaBytes', 'uid', 'usedBytes', 'version']);
    expect(show.json().owners).toEqual(['alice']);
    const human = await svcmail([...base, 'admin', 'mailboxes', 'list']);
    expect(human.stdout).toMatch(/^alice@example\.test\s+\["al@example\.test","ali@example\.test"\]\s+\["alice"\]\s+2147483648/m);
    expect(human.stdout).toMatch(/mailboxes: 1 listed$/m);

    // Audited as the CLI, with the scope=admin reads.
    const audit = await store
      .repo<{ actor: string; action: string }>(AuditEntryModel)
      .list({ filter: { actor: 'svcmail-cli' }, limit: 100 });
    expect(audit.map((e) => e.action)).toEqual(expect.arrayContaining(['mailboxes.create', 'domains.create']));
    expect(audit.some((e) => /admin/.test(e.action))).toBe(true);
    const log = await svcmail([...base, '--json', 'admin', 'audit-log', 'list', '--where', 'actor=svcmail-cli']);
    expect(log.json().length).toBe(audit.length);
  });

  it('manages distribution lists and transport rules; lists the (empty) quarantine and ingest queue', async () => {
    const v = await svcmail([...base, 'admin', 'domains', 'update', 'example.test', '--field', 'verified=true']);
    expect(v.stdout).toMatch(/domains: updated example\.test \(version \d+\)/);
    const l = await svcmail([
      ...base,
      'admin',
      'lists',
      'create',
      'team@example.test',
      '--field',
      'members=["alice@example.test","ext@elsewhere.test"]',
      '--field',
      'membersOnly=true',
    ]);
    expect(l.code, l.stderr).toBe(0);
    const rule = await svcmail([
      ...base,
      '--json',
      'admin',
      'transport-rules',
      'create',
      'tag-external',
      '--body',
      '{"action":"addHeader","headerName":"X-External","headerValue":"yes","match":{"senderDomain":"elsewhere.test"}}',
    ]);
    expect(rule.code, rule.stderr).toBe(0);
    const stored = await store.repo<{ name: string; action: string; headerName: string }>(TransportRuleModel).list();
    expect(stored).toMatchObject([{ name: 'tag-external', action: 'addHeader', headerName: 'X-External' }]);
    const lists = await store.repo<{ address: string; members: string[]; membersOnly: boolean }>(DistributionListModel).list();
    expect(lists).toMatchObject([
      { address: 'team@example.test', members: ['alice@example.test', 'ext@elsewhere.test'], membersOnly: true },
    ]);
    const del = await svcmail([...base, 'admin', 'lists', 'delete', 'team@example.test']);
    expect(del.stdout).toMatch(/lists: deleted team@example\.test/);
    expect(await store.repo(DistributionListModel).count()).toBe(0);
    const q = await svcmail([...base, '--json', 'admin', 'quarantine', 'list']);
    expect(q.code, q.stderr).toBe(0);
    expect(q.json()).toEqual([]);
    const iq = await svcmail([...base, 'admin', 'ingest-queue', 'list']);
    expect(iq.stdout).toMatch(/ingest-queue: 0 listed/);
  });

  it(
    'lists, releases and deletes messages a transport rule quarantined (the worker daemon scanned them)',
    { timeout: 180_000 },
    async () => {
      const rule = await svcmail([
        ...base,
        'admin',
        'transport-rules',
        'create',
        'hold-invoices',
        '--body',
        '{"action":"quarantine","match":{"subjectContains":"invoice"}}',
      ]);
      expect(rule.code, rule.stderr).toBe(0);
      const secret = JSON.parse(readFileSync(conf, 'utf8'))['mail:transport:ingest:secret'] as string;
      for (const n of [1, 2]) {
        const raw = `From: Billing <billing@remote.example>\r\nTo: alice@example.test\r\nSubject: Your invoice ${n}\r\nMessage-ID: <invoice-${n}-${Date.now()}@remote.example>\r\nDate: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nPlease pay.\r\n`;
        const res = await fetch(`${api.url}/internal/mta/deliver`, {
          method: 'POST',
          body: raw,
          headers: {
            authorization: `Bearer ${secret}`,
            'content-type': 'message/rfc822',
            'x-envelope-from': 'billing@remote.example',
            'x-envelope-to': 'alice@example.test',
          },
        });
        expect(res.status, await res.clone().text()).toBe(202);
      }
      // The scan job in the real worker daemon (production rules; the rule decides before the scanners).
      const dead = `127.0.0.1:${await freePort()}`;
      const worker = spawn(
        process.execPath,
        [
          join(ROOT, 'bin/svcmail-worker.js'),
          ...base,
          '--set',
          'mail:jobs:scan:interval_seconds=0.3',
          '--set',
          'mail:jobs:wake_address=',
          '--set',
          `mail:scan:rspamd:url=http://${dead}`,
          '--set',
          `mail:scan:clamd:address=${dead}`,
          '--set',
          'mail:scan:timeout_ms=1000',
          '--set',
          'log:level=warn',
        ],
        { env: { ...PROD_ENV, NOTIFY_SOCKET: '' }, stdio: ['ignore', 'ignore', 'pipe'] },
      );
      let workerLog = '';
      worker.stderr!.on('data', (d) => (workerLog += d));
      const entries = store.repo<{ state: string; messageUid: string | null }>(IngestEntryModel);
      try {
        for (const until = Date.now() + 60_000; ;) {
          const states = (await entries.list({ limit: 10 })).map((e) => e.state);
          if (states.length === 2 && states.every((x) => x === 'quarantined')) break;
          if (Date.now() > until || worker.exitCode !== null) throw new Error(`entries ${states.join(', ')}; worker: ${workerLog}`);
          await new Promise((r) => setTimeout(r, 250));
        }
      } finally {
        const gone = new Promise((r) => worker.once('exit', r));
        if (worker.exitCode === null) worker.kill('SIGTERM');
        await gone;
      }

      const list = await svcmail([...base, '--json', 'admin', 'quarantine', 'list']);
      expect(list.code, list.stderr).toBe(0);
      const held = (list.json() as Array<Record<string, unknown>>).sort((a, b) => String(a.subject).localeCompare(String(b.subject)));
      expect(held).toMatchObject([
        { reason: 'transport-rule', recipient: 'alice@example.test', envelopeFrom: 'billing@remote.example', subject: 'Your invoice 1' },
        { reason: 'transport-rule', recipient: 'alice@example.test', subject: 'Your invoice 2' },
      ]);
      for (const h of held) expect(h).not.toHaveProperty('rawRef'); // hidden fields stay hidden
      const [first, second] = held as Array<{ uid: string; entryUid: string; mailboxUid: string }>;
      const quarantine = store.repo(QuarantineModel);
      const inbox = async () =>
        (await store
          .repo<{ uid: string; totalCount: number; unreadCount: number }>(FolderModel)
          .findOne({ mailboxUid: first.mailboxUid, role: 'inbox' }))!;
      const before = await inbox();

      const released = await svcmail([...base, '--json', 'admin', 'quarantine', 'release', first.uid]);
      expect(released.code, released.stderr).toBe(0);
      const messageUid = released.json().messageUid as string;
      expect(released.json()).toMatchObject({ uid: first.uid, folderRole: 'inbox' });
      expect(await quarantine.get(first.uid)).toBeNull();
      expect(await entries.get(first.entryUid)).toMatchObject({ state: 'delivered', messageUid });
      const message = await store.repo<{ mailboxUid: string; folderUid: string; subject: string }>(MessageModel).get(messageUid);
      expect(message).toMatchObject({ mailboxUid: first.mailboxUid, folderUid: before.uid, subject: 'Your invoice 1' });
      expect(await inbox()).toMatchObject({ totalCount: before.totalCount + 1, unreadCount: before.unreadCount + 1 });

      const deleted = await svcmail([...base, '--json', 'admin', 'quarantine', 'delete', second.uid]);
      expect(deleted.code, deleted.stderr).toBe(0);
      expect(deleted.json()).toEqual({ deleted: second.uid });
      expect(await quarantine.count()).toBe(0);
      expect(await entries.get(second.entryUid)).toMatchObject({ state: 'quarantined', messageUid: null }); // never filed
      expect(await store.repo(MessageModel).count({ mailboxUid: first.mailboxUid })).toBe(1);
      expect(await inbox()).toMatchObject({ totalCount: before.totalCount + 1 });

      // Each action audited as the CLI; releasing a deleted item is a 404 (exit 66).
      const audit = await store
        .repo<{ actor: string; action: string; resourceUid: string }>(AuditEntryModel)
        .list({ filter: { actor: 'svcmail-cli', resource: 'quarantine' }, limit: 100 });
      expect(audit.filter((e) => e.resourceUid === first.uid).map((e) => e.action)).toContain('quarantine.release');
      expect(audit.filter((e) => e.resourceUid === second.uid).map((e) => e.action)).toContain('quarantine.delete');
      const again = await svcmail([...base, 'admin', 'quarantine', 'release', second.uid]);
      expect(again.code).toBe(66);
      expect(again.stderr).toMatch(/404/);
    },
  );

  it.each([
    [['admin', 'mailboxes', 'show', 'nobody@example.test'], 66, /no record with address/],
    [['admin', 'mailboxes', 'create', 'bob@nowhere.test', '--owner', 'bob'], 65, /400 api-106/],
    [['admin', 'policies', 'show', 'nonsense'], 64, /unknown policy/],
    [['admin', 'quarantine', 'release', '01a204e0-5c46-70ac-b9b8-dfe7f71fd366'], 66, /404/],
  ])('svcmail %j exits %i', async (args, code, message) => {
    const r = await svcmail([...base, ...args]);
    expect(r.code).toBe(code);
    expect(r.stderr).toMatch(message);
  });

  it('exits 69 when the API is not reachable', async () => {
    const r = await svcmail([...base, 'admin', '--url', `http://127.0.0.1:${await freePort()}`, 'domains', 'list']);
    expect(r.code).toBe(69);
    expect(r.stderr).toMatch(/cannot reach the API/);
  });

  it('serves the DNS checklist to the admin console: trusted role and elevation required', async () => {
    const config = loadConfig({ file: conf, env: { NODE_ENV: 'production' } });
    const call = async (token: string) =>
      fetch(`${api.url}/api/admin/dns-checklist?domain=example.test`, { headers: { authorization: `Bearer ${token}` } });
    const ok = await call(await signToken(config, { uid: 'root', roles: ['admin'], elevated: true }));
    expect(ok.status).toBe(200);
    const body = (await ok.json()) as { items: Array<{ purpose: string; record: string }> };
    const cli = await svcmail([...base, '--json', 'dns', '--domain', 'example.test']);
    expect(body.items).toEqual(cli.json().items); // the same checklist as svcmail dns
    expect((await call(await signToken(config, { uid: 'root', roles: ['admin'] }))).status).toBe(403);
    const user = await call(await signToken(config, { uid: 'alice', roles: [] }));
    expect(user.status).toBe(403);
    expect(((await user.json()) as { code: string }).code).toBe('api-103');
  });
  it('devices: list, show, wipe, unblock and inspect a mobile device, with --json', async () => {
    const dev = await store.repo(EasDeviceModel).create({
      userUid: 'alice',
      mailboxUid: 'no-such-mailbox',
      deviceId: 'CLIPHONE',
      deviceType: 'Android',
      policyKey: 42,
    } as never);
    const list = await svcmail([...base, '--json', 'admin', 'devices', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(list.json()).toMatchObject([{ uid: dev.uid, deviceId: 'CLIPHONE', provisioned: true, wipe: 'none' }]);
    const text = await svcmail([...base, 'admin', 'devices', 'list']);
    expect(text.stdout).toMatch(/CLIPHONE\s+Android\s+alice/);
    const wipe = await svcmail([...base, '--json', 'admin', 'devices', 'wipe', dev.uid, '--account-only']);
    expect(wipe.code, wipe.stderr).toBe(0);
    expect(wipe.json()).toMatchObject({ wipe: 'account-only' });
    expect((await store.repo<{ wipe: string }>(EasDeviceModel).get(dev.uid))!.wipe).toBe('account-only');
    const unblock = await svcmail([...base, 'admin', 'devices', 'unblock', dev.uid]);
    expect(unblock.stdout).toMatch(/devices: .* unblocked/);
    const inspect = await svcmail([...base, 'admin', 'devices', 'inspect', dev.uid]);
    expect(inspect.code, inspect.stderr).toBe(0);
    expect(inspect.stdout).toMatch(/device CLIPHONE, last sync never/);
    const missing = await svcmail([...base, 'admin', 'devices', 'wipe', '00000000-0000-7000-8000-000000000000']);
    expect(missing.code).toBe(66);
    const audit = await store
      .repo<{ action: string }>(AuditEntryModel)
      .list({ filter: { resource: 'devices', resourceUid: dev.uid }, limit: 10 });
    expect(audit.map((a) => a.action).sort()).toEqual(['devices.remote-wipe', 'devices.unblock']);
  });
});
