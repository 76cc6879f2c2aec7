// End to end through a real Postfix (Debian's): SMTP in, virtual_mailbox_domains/maps answered by
// svcmail's socketmap helper, the svcmail pipe(8) transport running `svcmail deliver` (the snippets
// in packaging/postfix, with only ports and paths replaced), the hand-off, the scan job, the Inbox.
// A private Postfix instance (its own config, queue and data directories, its own SMTP port) runs
// beside anything else on the machine; it needs root (master) and the postfix user. In CI it must run.
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { socketmapServer } from '../../../lib/mta-client/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { FolderModel, MessageModel, type Folder, type Message } from '../../../lib/mail/index.js';
import { freshSqlite } from '../../helpers/databases.js';
import { requirePrograms, requireRoot } from '../../helpers/peers.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, INGEST_SECRET, type IngestFixture } from './setup.js';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'svcmail.js');
const ready = requirePrograms('postfix') && requireRoot('a private Postfix instance');
const run = describe.runIf(ready);

/** A TCP forwarder to the api daemon that can be switched off: "svcmail is down" for Postfix. */
function switchableProxy(target: number) {
  const sockets = new Set<Socket>();
  let server: Server | null = null;
  return {
    port: 0,
    async up(port: number) {
      this.port = port;
      server = createServer((c) => {
        const u = connect(target, '127.0.0.1');
        sockets.add(c).add(u);
        c.pipe(u).pipe(c);
        const close = () => {
          c.destroy();
          u.destroy();
        };
        c.on('error', close).on('close', close);
        u.on('error', close).on('close', close);
      });
      await new Promise<void>((r) => server!.listen(port, '127.0.0.1', r));
    },
    async down() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
      server = null;
    },
  };
}

/** One SMTP conversation; answers the reply to each command (after the greeting). */
async function smtp(port: number, commands: string[]): Promise<string[]> {
  const s = connect(port, '127.0.0.1');
  let buf = '';
  const replies: string[] = [];
  const next = () =>
    new Promise<string>((resolve, reject) => {
      const check = () => {
        const m = /(^|\n)(\d{3}) [^\n]*\n/.exec(buf);
        if (!m) return;
        const end = m.index + m[0].length;
        const reply = buf.slice(0, end).trim();
        buf = buf.slice(end);
        s.off('data', onData);
        resolve(reply);
      };
      const onData = (d: Buffer) => {
        buf += d.toString();
        check();
      };
      s.on('data', onData);
      s.once('error', reject);
      check();
    });
  await next(); // greeting
  for (const c of commands) {
    s.write(`${c}\r\n`);
    replies.push(await next());
  }
  s.end('QUIT\r\n');
  return replies;
}

let logTail = () => '';

/** Runs a Postfix tool without blocking this process (the socketmap helper and the api answer from it). */
function tool(cmd: string, args: string[]): Promise<{ status: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('close', (status) => resolve({ status, stderr }));
  });
}

const waitFor = async <T>(what: string, fn: () => Promise<T | null | undefined | false>, ms = 30_000): Promise<T> => {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}; Postfix's log:\n${logTail()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
};

run('a real Postfix delivering through svcmail deliver', () => {
  let f: IngestFixture;
  let dir: string;
  let smtpPort: number;
  let lookup: Server;
  const proxy = { current: null as ReturnType<typeof switchableProxy> | null };
  const postfix = (...args: string[]) => spawnSync('/usr/sbin/postfix', ['-c', join(dir, 'etc'), ...args], { encoding: 'utf8' });
  const entries = () => f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
  const maillog = () => (existsSync(join(dir, 'maillog')) ? readFileSync(join(dir, 'maillog'), 'utf8') : '');

  beforeAll(async () => {
    logTail = () => maillog().split('\n').slice(-30).join('\n');
    f = await ingestFixture({ name: 'sqlite', open: async () => freshSqlite() });
    const lookupPort = await freePort();
    lookup = socketmapServer({ url: f.api.url, secret: INGEST_SECRET });
    await new Promise<void>((r) => lookup.listen(lookupPort, '127.0.0.1', r));
    proxy.current = switchableProxy(Number(new URL(f.api.url).port));
    await proxy.current.up(await freePort());
    smtpPort = await freePort();

    dir = mkdtempSync(join(tmpdir(), 'svcmail-postfix-'));
    chmodSync(dir, 0o755); // the postfix user reaches its data directory through it
    for (const d of ['etc', 'queue', 'data']) mkdirSync(join(dir, d));
    chownSync(
      join(dir, 'data'),
      Number(execFileSync('id', ['-u', 'postfix'], { encoding: 'utf8' })),
      Number(execFileSync('id', ['-g', 'postfix'], { encoding: 'utf8' })),
    );
    // The shipped snippets, with the socketmap port of this run and the pipe command run from the sources.
    const mainSnippet = readFileSync(join(ROOT, 'packaging/postfix/main.cf.snippet'), 'utf8').replaceAll(
      '127.0.0.1:10027',
      `127.0.0.1:${lookupPort}`,
    );
    const masterSnippet = readFileSync(join(ROOT, 'packaging/postfix/master.cf.snippet'), 'utf8')
      .replace('user=svcmail', 'user=nobody')
      .replace('argv=/usr/bin/svcmail deliver', `argv=${process.execPath} ${BIN} deliver --url http://127.0.0.1:${proxy.current.port}`);
    expect(masterSnippet).toContain(
      '-f ${sender} -q ${queue_id} --client-address=${client_address} --client-helo=${client_helo} --client-hostname=${client_hostname} -- ${recipient}',
    );
    writeFileSync(
      join(dir, 'etc', 'main.cf'),
      [
        'compatibility_level = 3.6',
        `queue_directory = ${dir}/queue`,
        `data_directory = ${dir}/data`,
        'command_directory = /usr/sbin',
        'daemon_directory = /usr/lib/postfix/sbin',
        'meta_directory = /etc/postfix',
        'shlib_directory = /usr/lib/postfix',
        'mail_owner = postfix',
        'setgid_group = postdrop',
        'inet_interfaces = 127.0.0.1',
        'inet_protocols = ipv4',
        'myhostname = mx.svcmail.test',
        // 127.0.0.1 is not a trusted network here: the test client is "the internet" (no relaying for it).
        'mydestination =',
        'mynetworks = 192.0.2.1/32',
        'alias_maps =',
        'alias_database =',
        'local_recipient_maps =',
        'biff = no',
        'smtputf8_enable = no',
        `maillog_file = ${dir}/maillog`,
        `maillog_file_prefixes = ${dir}`,
        // The pipe command reads the ingest secret from its environment (packaging/postfix/README.md).
        `import_environment = MAIL_CONFIG MAIL_DEBUG MAIL_LOGTAG TZ LANG=C NODE_ENV=test SVCMAIL_CONFIG= SVCMAIL_INGEST_SECRET=${INGEST_SECRET}`,
        'export_environment = TZ MAIL_CONFIG LANG NODE_ENV SVCMAIL_CONFIG SVCMAIL_INGEST_SECRET',
        // Deferred mail is retried as soon as it is flushed.
        'minimal_backoff_time = 1s',
        'maximal_backoff_time = 2s',
        'queue_run_delay = 1s',
        mainSnippet,
      ].join('\n'),
    );
    const services = [
      `127.0.0.1:${smtpPort} inet n - n - - smtpd`,
      'cleanup unix n - n - 0 cleanup',
      'qmgr unix n - n 300 1 qmgr',
      'rewrite unix - - n - - trivial-rewrite',
      'bounce unix - - n - 0 bounce',
      'defer unix - - n - 0 bounce',
      'trace unix - - n - 0 bounce',
      'verify unix - - n - 1 verify',
      'flush unix n - n 1000? 0 flush',
      'proxymap unix - - n - - proxymap',
      'smtp unix - - n - - smtp',
      'error unix - - n - - error',
      'retry unix - - n - - error',
      'discard unix - - n - - discard',
      'anvil unix - - n - 1 anvil',
      'scache unix - - n - 1 scache',
      'showq unix n - n - - showq',
      'postlog unix-dgram n - n - 1 postlogd',
    ];
    writeFileSync(join(dir, 'etc', 'master.cf'), `${services.join('\n')}\n${masterSnippet}`);
    // pipe(8) runs the command as an unprivileged user (here nobody): it must be able to read the checkout.
    const probe = spawnSync(
      '/usr/bin/setpriv',
      ['--reuid=nobody', '--regid=nogroup', '--clear-groups', process.execPath, BIN, '--version'],
      { encoding: 'utf8', env: { PATH: process.env.PATH, NODE_ENV: 'test', SVCMAIL_CONFIG: '' } },
    );
    expect(
      probe.status,
      `the user nobody cannot run ${BIN} (is the checkout under a directory only root can enter?): ${probe.stderr}`,
    ).toBe(0);
    const started = postfix('start');
    expect(started.status, `${started.stdout}${started.stderr}${maillog()}`).toBe(0);
    await waitFor('Postfix to answer SMTP', async () => (await smtp(smtpPort, ['NOOP']).catch(() => ['']))[0].startsWith('250'));
  }, 120_000);

  afterAll(async () => {
    if (dir) postfix('stop');
    lookup?.close();
    await proxy.current?.down();
    await f?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("files a message submitted over SMTP (smtp-source) in the Inbox, keyed by Postfix's queue id", async () => {
    const file = join(dir, 'message.eml');
    writeFileSync(
      file,
      message({
        to: 'alice@example.test, bob@example.test',
        subject: 'through postfix',
        body: 'Sent by smtp-source through a real Postfix.',
      }),
    );
    const src = await tool('/usr/sbin/smtp-source', [
      '-c',
      '-m',
      '1',
      '-F',
      file,
      '-f',
      'sender@remote.example',
      '-t',
      'alice@example.test',
      `127.0.0.1:${smtpPort}`,
    ]);
    expect(src.status, src.stderr + maillog()).toBe(0);
    const queued = await waitFor('the hand-off from the pipe transport', async () => {
      const rows = await entries().list({ filter: { recipient: 'alice@example.test' } });
      return rows.find((r) => r.transactionId.startsWith('mta:')) ?? null;
    });
    // The queue id Postfix logged for the message is the transaction id svcmail keyed it by, and
    // Postfix counts it delivered (svcmail deliver exited 0).
    const queueId = queued.transactionId.slice('mta:'.length);
    // The SMTP session as pipe(8) expanded it (${client_address}, ${client_helo}): given to rspamd with the message.
    expect(queued.clientAddress).toBe('127.0.0.1');
    expect(queued.clientHelo, 'smtp-source says HELO').toMatch(/^[\x21-\x7e]+$/);
    await waitFor('Postfix to log the delivery', async () =>
      new RegExp(`${queueId}: to=<alice@example.test>.*relay=svcmail.*status=sent \\(delivered via svcmail service`).test(maillog()),
    );
    await drainQueue(f.worker({ scanners: 'clean' }), 'postfix-test');
    const inbox = (await f.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: f.users.aliceBox.uid, role: 'inbox' }))!;
    const filed = await f.api.deps.store
      .repo<Message>(MessageModel)
      .list({ filter: { mailboxUid: f.users.aliceBox.uid, folderUid: inbox.uid, subject: 'through postfix' } });
    expect(filed).toHaveLength(1);
    const raw = await (
      await fetch(`${f.api.url}/api/mail/messages/${filed[0].uid}/raw`, { headers: { authorization: `Bearer ${f.users.alice}` } })
    ).text();
    // Postfix's own trace header: the message really came through it.
    const trace = /^Received: from [^\n]*\r?\n\s+by mx\.svcmail\.test \(Postfix\) with E?SMTP id (\w+)/m.exec(raw);
    expect(trace?.[1], raw.slice(0, 600)).toBe(queueId);
    // pipe(8) flag R: the envelope sender as Return-Path.
    expect(raw).toMatch(/^Return-Path: <sender@remote\.example>/);
    expect(raw).toContain('Sent by smtp-source through a real Postfix.');
  });

  it('refuses an unknown recipient and a domain not served during SMTP (nothing queued, nothing bounced later)', async () => {
    const before = await entries().count({});
    const r = await smtp(smtpPort, [
      'EHLO client.example',
      'MAIL FROM:<someone@remote.example>',
      'RCPT TO:<ghost@example.test>',
      'RCPT TO:<x@nowhere.example>',
      'RCPT TO:<alice@example.test>',
    ]);
    expect(r[2]).toMatch(/^550 5\.1\.1 <ghost@example\.test>: Recipient address rejected: User unknown in virtual mailbox table/);
    expect(r[3]).toMatch(/^[45]54 [45]\.7\.1 <x@nowhere\.example>: Relay access denied/); // 454: Postfix's defer_unauth_destination
    expect(r[4]).toMatch(/^250 /);
    expect(await entries().count({})).toBe(before);
  });

  it('keeps the message while svcmail does not answer (exit 75: deferred) and files it once when svcmail is back', async () => {
    await proxy.current!.down();
    const file = join(dir, 'deferred.eml');
    writeFileSync(file, message({ subject: 'while svcmail was down' }));
    const src = await tool('/usr/sbin/smtp-source', [
      '-c',
      '-m',
      '1',
      '-F',
      file,
      '-f',
      'sender@remote.example',
      '-t',
      'alice@example.test',
      `127.0.0.1:${smtpPort}`,
    ]);
    expect(src.status, src.stderr + maillog()).toBe(0);
    // svcmail deliver exits 75: Postfix keeps the message and says why.
    const deferred = await waitFor('Postfix to defer the delivery', async () =>
      /(\w+): to=<alice@example\.test>, relay=svcmail, .*dsn=4\.3\.0, status=deferred \(svcmail unreachable/.exec(maillog()),
    );
    const queueId = deferred[1];
    expect(await entries().count({ transactionId: `mta:${queueId}` })).toBe(0);
    await proxy.current!.up(proxy.current!.port);
    await tool('/usr/sbin/postqueue', ['-c', join(dir, 'etc'), '-f']);
    await waitFor('the retried hand-off', async () => (await entries().count({ transactionId: `mta:${queueId}` })) === 1);
    await drainQueue(f.worker({ scanners: 'clean' }), 'postfix-test');
    const filed = await f.api.deps.store
      .repo<Message>(MessageModel)
      .list({ filter: { mailboxUid: f.users.aliceBox.uid, subject: 'while svcmail was down' } });
    expect(filed).toHaveLength(1);
    expect(await entries().count({ transactionId: `mta:${queueId}` })).toBe(1);
  }, 90_000);
});
