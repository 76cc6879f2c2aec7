// The real api and worker daemons as child processes over an ingest fixture's store and data_dir,
// and the checks every crash test makes afterwards: each acknowledged message in each recipient
// mailbox exactly once (by sha256), nothing half-filed, the queue drained.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { expect } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { FolderModel, MailboxModel, MessageModel, type Folder, type Mailbox, type Message } from '../../../lib/mail/index.js';
import type { Repo } from '../../../lib/storage/index.js';
import { datastoreOf } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { INGEST_SECRET, type IngestFixture } from './setup.js';

const BIN = (name: string) => fileURLToPath(new URL(`../../../bin/svcmail-${name}.js`, import.meta.url));

export const exited = (c: ChildProcess) =>
  new Promise<NodeJS.Signals | number | null>((r) =>
    c.exitCode !== null || c.signalCode ? r(c.signalCode ?? c.exitCode) : c.once('exit', (code, sig) => r(sig ?? code)),
  );
export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** What the MTA was told 202 for: the raw bytes' sha256 and the mailboxes they must reach. */
export interface Acknowledged {
  sha256: string;
  mailboxes: string[];
  /** The number of copies each mailbox holds (a filter-rule copy files a second one). */
  copiesIn?: (mailboxUid: string) => number;
}

export interface Daemons {
  start(name: 'api' | 'worker', env?: Record<string, string>, extra?: Record<string, unknown>): Promise<ChildProcess>;
  /** What a daemon printed (for a failure message). */
  said(c: ChildProcess): string;
  killAll(): void;
}

export function daemons(f: IngestFixture): Daemons {
  const children: ChildProcess[] = [];
  const output = new Map<ChildProcess, Buffer[]>();
  return {
    async start(name, env = {}, extra = {}) {
      const sets = {
        ...datastoreOf(f.api.config),
        data_dir: f.dataDir,
        'auth:secret': 'test-secret-0123456789abcdef',
        'mail:transport:ingest:secret': INGEST_SECRET,
        'mail:jobs:wake_address': '',
        'log:level': 'error',
        'mail:jobs:scan:interval_seconds': 0.3,
        'mail:jobs:scan:batch_size': 4,
        'mail:jobs:scan:concurrency': 2,
        'mail:jobs:scan:lease_seconds': 2,
        'mail:ingest:retry_backoff_seconds': 0,
        'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
        'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
        ...extra,
      };
      const args = Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`]);
      const c = spawn(process.execPath, [BIN(name), ...args], {
        env: { ...process.env, NODE_ENV: 'test', ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const said: Buffer[] = [];
      c.stdout!.on('data', (b: Buffer) => said.push(b));
      c.stderr!.on('data', (b: Buffer) => said.push(b));
      output.set(c, said);
      children.push(c);
      return c;
    },
    said: (c) =>
      Buffer.concat(output.get(c) ?? [])
        .toString()
        .slice(-2000),
    killAll() {
      for (const c of children) if (c.exitCode === null && !c.signalCode) c.kill('SIGKILL');
    },
  };
}

export const entries = (f: IngestFixture): Repo<IngestEntry> => f.api.deps.store.repo<IngestEntry>(IngestEntryModel);

/** A fresh worker daemon works the queue off (leases of a killed one expire first), then stops cleanly. */
export async function drainWithWorker(f: IngestFixture, d: Daemons, limitMs = 60_000): Promise<void> {
  const worker = await d.start('worker');
  const until = Date.now() + limitMs;
  while ((await entries(f).count({ state: 'queued' })) > 0 || (await entries(f).count({ claimedBy: { $ne: null } })) > 0) {
    if (Date.now() > until)
      throw new Error(`queue not drained: ${await entries(f).count({ state: 'queued' })} queued; worker said: ${d.said(worker)}`);
    await new Promise((r) => setTimeout(r, 200));
  }
  worker.kill('SIGTERM');
  expect(await exited(worker)).toBe(0);
}

/** Nothing half-filed: every folder's counters and every mailbox's usage equal the message rows. */
export async function expectConsistent(f: IngestFixture, mailboxUids: string[]): Promise<void> {
  const store = f.api.deps.store;
  const messages = store.repo<Message>(MessageModel);
  for (const box of mailboxUids) {
    const all = await messages.list({ filter: { mailboxUid: box }, limit: 100_000 });
    for (const folder of await store.repo<Folder>(FolderModel).list({ filter: { mailboxUid: box }, limit: 100 })) {
      const inFolder = all.filter((m) => m.folderUid === folder.uid);
      expect({ folder: folder.name, total: folder.totalCount, unread: folder.unreadCount }).toEqual({
        folder: folder.name,
        total: inFolder.length,
        unread: inFolder.filter((m) => !m.seen).length,
      });
    }
    expect((await store.repo<Mailbox>(MailboxModel).get(box))!.usedBytes).toBe(all.reduce((n, m) => n + m.size, 0));
  }
}

/**
 * Every acknowledged message exactly as often as it must be in each recipient mailbox (by sha256),
 * counters equal to the rows, nothing queued or leased. Returns the copies checked and duplicates seen.
 */
export async function expectFiledOnce(
  f: IngestFixture,
  acknowledged: readonly Acknowledged[],
  mailboxUids: string[],
): Promise<{ checked: number; duplicates: number }> {
  const messages = f.api.deps.store.repo<Message>(MessageModel);
  const tally = { checked: 0, duplicates: 0 };
  for (const a of acknowledged) {
    for (const mailboxUid of a.mailboxes) {
      const rows = await messages.list({ filter: { mailboxUid, blobId: a.sha256 }, limit: 10 });
      const want = a.copiesIn?.(mailboxUid) ?? 1;
      tally.checked += 1;
      if (rows.length > want) tally.duplicates += rows.length - want;
      expect(rows.length, `${a.sha256.slice(0, 12)} in ${mailboxUid}`).toBe(want);
    }
  }
  await expectConsistent(f, mailboxUids);
  expect(await entries(f).count({ state: 'queued' })).toBe(0);
  expect(await entries(f).count({ claimedBy: { $ne: null } })).toBe(0);
  return tally;
}
