// Two hosts, one service (issue #29): two complete copies of the appliance — `svcmail start
// --foreground`, four daemons each, on addresses of their own (127.0.0.1 and 127.0.0.2) — start at
// the same moment on a brand-new PostgreSQL database, with one Redis and blobs in the database
// (no shared file system). Through both:
//   - a few hundred hand-offs, some retried through the other copy, while one copy's worker is
//     killed with SIGKILL mid-ingest → every message filed exactly once per recipient, counts exact;
//   - a push client of one copy receives the events of mail handed to the other;
//   - background sends → every request 202, every message relayed once;
//   - a raw message stored through one copy is read through the other;
//   - wrong ingest secrets spread over both copies meet 429 after mail:internal:max_failures.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signToken } from '../../lib/auth/index.js';
import { loadConfig } from '../../lib/config/index.js';
import { freshPostgres, postgresAvailable, type TestDatabase } from '../helpers/databases.js';
import { redisAvailable, TEST_REDIS_URL } from '../helpers/redis.js';
import { freePort } from '../helpers/scanners.js';
import { CLI, ROOT, freeListenSettings } from '../integration/appliance/helpers.js';
import { Client, ORIGIN } from '../integration/push/_stack.js';
import { recorder, type Recorder } from '../integration/send/helpers.js';
import { Device, kid, kids, ns, textOf } from '../integration/plugins/eas/_client.js';

const ready = (await postgresAvailable()) && (await redisAvailable());

const SECRET = 'two-copies-secret-0123456789abcdef';
const INGEST = 'two-copies-ingest-secret-0123456789';
const MAX_FAILURES = 6;
const HANDOFFS = 240;
const SENDS = 20;

interface Copy {
  name: string;
  ip: string;
  dir: string;
  file: string;
  api: string;
  push: string;
  child: ChildProcess;
  output: () => string;
}

/** A configuration for one copy: its own address, ports and data_dir; the shared database, Redis and secrets. */
async function configure(
  ip: string,
  shared: Record<string, unknown>,
): Promise<{ dir: string; file: string; listen: Record<string, string> }> {
  const dir = mkdtempSync(join(tmpdir(), `svcmail-copy-${ip}-`));
  const listen = await freeListenSettings(ip);
  const file = join(dir, 'svcmail.conf');
  writeFileSync(file, JSON.stringify({ ...shared, ...listen, data_dir: join(dir, 'data') }));
  return { dir, file, listen };
}

function startCopy(name: string, ip: string, c: { dir: string; file: string; listen: Record<string, string> }): Copy {
  const child = spawn(process.execPath, [CLI, 'start', '--foreground', '--config', c.file], {
    cwd: ROOT,
    env: { ...process.env, NODE_ENV: 'test', SVCMAIL_CONFIG: '', NOTIFY_SOCKET: '' },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let out = '';
  const keep = (d: Buffer) => (out = (out + d.toString()).slice(-30_000));
  child.stdout!.on('data', keep);
  child.stderr!.on('data', keep);
  return { name, ip, ...c, api: `http://${c.listen['listen:api']}`, push: `http://${c.listen['listen:push']}`, child, output: () => out };
}

async function waitReady(copy: Copy, ms = 180_000): Promise<void> {
  const until = Date.now() + ms;
  while (!/svcmail: ready, 4 daemons running/.test(copy.output())) {
    if (copy.child.exitCode !== null || Date.now() > until) throw new Error(`copy ${copy.name} did not start: ${copy.output()}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** The pid of a copy's daemon, from the supervisor's children. */
function daemonPid(copy: Copy, daemon: string): number {
  const ps = execFileSync('ps', ['-o', 'pid=,args=', '--ppid', String(copy.child.pid)], { encoding: 'utf8' });
  const line = ps.split('\n').find((l) => l.includes(`svcmail-${daemon}.js`));
  if (!line) throw new Error(`no ${daemon} daemon under copy ${copy.name}: ${ps}`);
  return Number(line.trim().split(/\s+/)[0]);
}

const mail = (subject: string, to: string) =>
  `From: Sender <sender@remote.example>\r\nTo: ${to}\r\nSubject: ${subject}\r\nMessage-ID: <${subject.replace(/\W/g, '-')}@remote.example>\r\n` +
  `Date: ${new Date().toUTCString()}\r\nMIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of ${subject}.\r\n`;

/** POST /internal/mta/deliver as Postfix does, from a chosen loopback source address. */
function handOff(
  copy: Copy,
  opts: { to: string[]; raw: string; tx: string; secret?: string; from?: string },
): Promise<{ status: number; body: string }> {
  const url = new URL(`${copy.api}/internal/mta/deliver`);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: url.pathname,
        method: 'POST',
        localAddress: opts.from ?? '127.0.0.1',
        headers: {
          authorization: `Bearer ${opts.secret ?? INGEST}`,
          'content-type': 'message/rfc822',
          'x-envelope-from': 'sender@remote.example',
          'x-envelope-to': opts.to.map(encodeURIComponent).join(','),
          'x-transaction-id': opts.tx,
        },
      },
      (res) => {
        let body = '';
        res.on('data', (d: Buffer) => (body += d.toString()));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('error', reject);
    req.end(opts.raw);
  });
}

describe.skipIf(!ready)('two complete copies on one PostgreSQL and one Redis', { timeout: 600_000 }, () => {
  let db: TestDatabase;
  let sql: pg.Client;
  let rec: Recorder;
  const copies: Copy[] = [];
  const tokens: Record<string, string> = {};
  const boxes: Record<string, string> = {};
  const inboxes: Record<string, string> = {};
  const call = async (copy: Copy, user: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(`${copy.api}${path}`, {
      method,
      headers: { authorization: `Bearer ${tokens[user]}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      body: body ? JSON.stringify(body) : undefined,
    });
    const text = await res.text();
    return { status: res.status, body: text ? JSON.parse(text) : null };
  };

  beforeAll(async () => {
    db = await freshPostgres();
    rec = recorder();
    const shared = {
      'auth:secret': SECRET,
      'mail:transport:ingest:secret': INGEST,
      'mail:dev_auto_login:enabled': false,
      'cors:origins': [ORIGIN],
      datastores: { sql: { url: db.url } },
      'redis:url': TEST_REDIS_URL,
      'redis:prefix': `svcmail-two-${randomBytes(4).toString('hex')}:`,
      'mail:blobs:backend': 'database',
      'mail:transport:provider': 'sendmail',
      'mail:transport:sendmail:path': rec.bin,
      // No scanner answers: the development fallback (NODE_ENV test) files as clean.
      'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
      'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
      'mail:jobs:scan:interval_seconds': 1,
      'mail:jobs:scan:lease_seconds': 30,
      'mail:internal:max_failures': MAX_FAILURES,
      'mail:internal:failure_window_seconds': 300,
      'log:level': 'warn',
    };
    const configs = await Promise.all([configure('127.0.0.1', shared), configure('127.0.0.2', shared)]);
    // Both at the same moment, on the empty database.
    copies.push(startCopy('A', '127.0.0.1', configs[0]), startCopy('B', '127.0.0.2', configs[1]));
    await Promise.all(copies.map((c) => waitReady(c)));
    sql = new pg.Client({ connectionString: db.url });
    await sql.connect();

    const config = loadConfig({ file: configs[0].file, env: { NODE_ENV: 'test' } });
    tokens.admin = await signToken(config, { uid: 'root', roles: ['admin'], elevated: true });
    for (const u of ['alice', 'bob']) tokens[u] = await signToken(config, { uid: u });
    const [a, b] = copies;
    expect((await call(a, 'admin', 'POST', '/api/mail/domains', { name: 'example.test', verified: true })).status).toBe(201);
    for (const [u, copy] of [
      ['alice', a],
      ['bob', b],
    ] as const) {
      const r = await call(copy, 'admin', 'POST', '/api/mail/mailboxes', { address: `${u}@example.test`, owners: [u], name: u });
      expect(r.status, JSON.stringify(r.body)).toBe(201);
      boxes[u] = r.body.uid;
      const f = await call(copy === a ? b : a, u, 'GET', `/api/mail/folders?mailboxUid=${boxes[u]}&role=inbox`);
      inboxes[u] = f.body[0].uid;
    }
  }, 300_000);

  afterAll(async () => {
    for (const c of copies) if (c.child.exitCode === null) process.kill(-c.child.pid!, 'SIGKILL');
    await sql?.end().catch(() => undefined);
    await db?.drop().catch(() => undefined);
    for (const c of copies) rmSync(c.dir, { recursive: true, force: true });
  });

  it('both copies started on the new database and every daemon of both sends heartbeats', async () => {
    const d = await call(copies[1], 'admin', 'GET', '/api/admin/diagnostics');
    const alive = Object.fromEntries((d.body.daemons as Array<{ daemon: string; alive: number }>).map((x) => [x.daemon, x.alive]));
    expect(alive).toMatchObject({ api: 2, worker: 2, push: 2, protocols: 2 });
    for (const c of copies) expect(c.output()).not.toMatch(/cannot start|Already exists/);
  });

  it('hand-offs through both, retried across copies, a worker killed mid-ingest: every copy filed once; push crosses copies', async () => {
    const [a, b] = copies;
    // A push client of copy B watches alice's inbox; her mail is handed to copy A only.
    const watcher = await Client.open(b.push, { token: tokens.alice });
    expect(await watcher.subscribe([inboxes.alice])).toEqual(['alice', inboxes.alice]);

    const sent: Array<{ subject: string; to: string[] }> = [];
    const pending = async () =>
      Number((await sql.query(`SELECT count(*) AS n FROM ingest_entries WHERE state = 'queued'`)).rows[0].n as string);
    let killed = false;
    let queuedAtKill = 0;
    const queue = Array.from({ length: HANDOFFS }, (_, i) => i);
    const answers: number[] = [];
    const lane = async () => {
      for (let i = queue.shift(); i !== undefined; i = queue.shift()) {
        const to = i % 3 === 0 ? ['alice@example.test', 'bob@example.test'] : i % 2 ? ['bob@example.test'] : ['alice@example.test'];
        const first = to.includes('alice@example.test') && to.length === 1 ? a : i % 2 ? b : a;
        const subject = `handoff ${i}`;
        const raw = mail(subject, to.join(', '));
        answers.push((await handOff(first, { to, raw, tx: `two-copies-${i}` })).status);
        // Every fifth is retried through the other copy, as an MTA whose first answer was lost.
        if (i % 5 === 0) answers.push((await handOff(first === a ? b : a, { to, raw, tx: `two-copies-${i}` })).status);
        sent.push({ subject, to });
        if (i === Math.floor(HANDOFFS / 3) && !killed) {
          killed = true;
          queuedAtKill = await pending();
          process.kill(daemonPid(a, 'worker'), 'SIGKILL');
        }
      }
    };
    await Promise.all(Array.from({ length: 6 }, lane));
    expect(killed).toBe(true);
    expect(answers.filter((s) => s !== 202)).toEqual([]);

    // Until both queues are drained (the killed worker's entries are taken over by copy B's, or by its restart).
    const until = Date.now() + 180_000;
    while ((await pending()) > 0) {
      if (Date.now() > until) throw new Error(`not drained: ${await pending()} queued\nA: ${a.output()}\nB: ${b.output()}`);
      await new Promise((r) => setTimeout(r, 250));
    }
    const filed = await sql.query<{ mailbox: string; subject: string; n: string }>(
      `SELECT "mailboxUid" AS mailbox, subject, count(*) AS n FROM messages WHERE subject LIKE 'handoff %' GROUP BY 1, 2`,
    );
    const got = new Map(filed.rows.map((r) => [`${r.mailbox} ${r.subject}`, Number(r.n)]));
    const want = new Map<string, number>();
    for (const s of sent) for (const t of s.to) want.set(`${boxes[t.split('@')[0]]} ${s.subject}`, 1);
    expect([...got.entries()].filter(([, n]) => n !== 1)).toEqual([]); // no duplicates
    expect(got.size).toBe(want.size); // none lost
    expect([...want.keys()].filter((k) => !got.has(k))).toEqual([]);
    // Counters equal the rows, in every inbox.
    for (const u of ['alice', 'bob']) {
      const f = await call(b, u, 'GET', `/api/mail/folders?mailboxUid=${boxes[u]}&role=inbox`);
      const rows = await sql.query(`SELECT count(*) AS n FROM messages WHERE "folderUid" = $1`, [inboxes[u]]);
      expect(f.body[0].totalCount).toBe(Number(rows.rows[0].n));
    }
    // The copy-B push client heard of alice's mail, all of it handed to copy A.
    await watcher.next((x) => x.type === 'MESSAGE' && x.channel === inboxes.alice);
    watcher.close();
    // Copy A's supervisor restarted its worker and said so.
    expect(a.output()).toMatch(/worker.*exited \(.*SIGKILL.*\); restarting it in/);
    process.stdout.write(
      `two copies: ${sent.length} hand-offs, ${want.size} copies filed once; ${queuedAtKill} queued when copy A's worker was killed\n`,
    );
  });

  it('a raw message stored through one copy is read through the other (blobs in the database)', async () => {
    const [a, b] = copies;
    const r = await handOff(a, {
      to: ['alice@example.test'],
      raw: mail('blob across copies', 'alice@example.test'),
      tx: 'two-copies-blob',
    });
    expect(r.status).toBe(202);
    let uid: string | undefined;
    for (let i = 0; i < 200 && !uid; i++) {
      const m = await sql.query(`SELECT uid FROM messages WHERE subject = 'blob across copies'`);
      uid = m.rows[0]?.uid as string | undefined;
      if (!uid) await new Promise((res) => setTimeout(res, 100));
    }
    expect(uid).toBeDefined();
    const res = await fetch(`${b.api}/api/mail/messages/${uid}/raw`, { headers: { authorization: `Bearer ${tokens.alice}` } });
    expect(res.status).toBe(200);
    expect(await res.text()).toContain('Body of blob across copies.');
    const chunks = await sql.query(`SELECT count(*) AS n FROM blob_chunks`);
    expect(Number(chunks.rows[0].n)).toBeGreaterThan(0);
  });

  it('background sends through both copies: every request 202, every message relayed once', async () => {
    const ids: string[] = [];
    const answers = await Promise.all(
      Array.from({ length: SENDS }, async (_, i) => {
        const copy = copies[i % 2];
        const d = await call(copy, 'alice', 'POST', '/api/mail/compose', {
          mailboxUid: boxes.alice,
          from: 'alice@example.test',
          to: [`r${i}@example.net`],
          subject: `send ${i}`,
          text: `Send ${i}.`,
        });
        expect(d.status, JSON.stringify(d.body)).toBe(201);
        ids.push(d.body.uid as string);
        return (await call(copy, 'alice', 'POST', `/api/mail/messages/${d.body.uid}/send`, { background: true })).status;
      }),
    );
    expect(answers).toEqual(Array.from({ length: SENDS }, () => 202));
    const until = Date.now() + 120_000;
    while (rec.runs().length < SENDS && Date.now() < until) await new Promise((r) => setTimeout(r, 200));
    await new Promise((r) => setTimeout(r, 2000)); // a second relay of any of them would show by now
    const subjects = rec
      .runs()
      .map((r) => /^Subject: (.*)$/m.exec(r.eml)?.[1]?.trim())
      .sort();
    expect(subjects).toEqual(Array.from({ length: SENDS }, (_, i) => `send ${i}`).sort());
  });

  it('mobile sync across copies: a newer Ping on one copy ends the older on the other; mail handed to either wakes it', async () => {
    const [a, b] = copies;
    const pv = ns('Provision');
    const fh = ns('FolderHierarchy');
    const as = ns('AirSync');
    const pg = ns('Ping');
    // The same phone, its requests landing on either copy (a load balancer without sticky sessions).
    const onA = new Device(a.api, `Bearer ${tokens.bob}`, 'TWOCOPIES1');
    const onB = new Device(b.api, `Bearer ${tokens.bob}`, 'TWOCOPIES1');
    await onA.provision(pv);
    onB.policyKey = onA.policyKey;
    const fs = await onB.send('FolderSync', fh('FolderSync', [fh('SyncKey', '0')]));
    const inbox = textOf(
      kids(kid(fs.tree!, 'Changes'), 'Add').find((x) => textOf(x, 'Type') === '2'),
      'ServerId',
    )!;
    let key = 0;
    for (const dev of [onA, onB, onA]) {
      const r = await dev.send(
        'Sync',
        as('Sync', [as('Collections', [as('Collection', [as('SyncKey', key), as('CollectionId', inbox), as('WindowSize', 500)])])]),
      );
      key = Number(textOf(kid(kid(r.tree!, 'Collections'), 'Collection'), 'SyncKey'));
    }
    const first = onA.send(
      'Ping',
      pg('Ping', [pg('HeartbeatInterval', '300'), pg('Folders', [pg('Folder', [pg('Id', inbox), pg('Class', 'Email')])])]),
    );
    await new Promise((r) => setTimeout(r, 500));
    const started = Date.now();
    const second = onB.send('Ping', null);
    const ended = await first;
    expect(textOf(ended.tree!, 'Status')).toBe('1');
    expect(Date.now() - started).toBeLessThan(10_000); // ended by the newer Ping, not by its heartbeat
    await new Promise((r) => setTimeout(r, 500));
    expect(
      (await handOff(a, { to: ['bob@example.test'], raw: mail('ping across copies', 'bob@example.test'), tx: 'two-copies-ping' })).status,
    ).toBe(202);
    const woke = await second;
    expect(textOf(woke.tree!, 'Status')).toBe('2');
  });

  it('wrong ingest secrets spread over both copies meet 429 after max_failures in total', async () => {
    const [a, b] = copies;
    const from = '127.0.0.74';
    const statuses: number[] = [];
    for (let i = 0; i < MAX_FAILURES; i++)
      statuses.push(
        (await handOff(i % 2 ? b : a, { to: ['alice@example.test'], raw: mail('x', 'alice'), tx: `bad-${i}`, secret: `wrong-${i}`, from }))
          .status,
      );
    expect(statuses).toEqual(Array.from({ length: MAX_FAILURES }, () => 403));
    for (const copy of copies) {
      const over = await handOff(copy, { to: ['alice@example.test'], raw: mail('x', 'alice'), tx: 'bad-over', secret: 'wrong', from });
      expect(over.status).toBe(429);
    }
    // Another address is not affected.
    const other = await handOff(b, {
      to: ['alice@example.test'],
      raw: mail('after lockout', 'alice@example.test'),
      tx: 'two-copies-after',
    });
    expect(other.status).toBe(202);
  });
});
