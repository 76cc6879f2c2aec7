import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FolderModel, type Folder } from '../../../lib/mail/index.js';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { datastoreOf, storeBackends } from '../../helpers/databases.js';
import { freePort } from '../../helpers/scanners.js';
import { ingestFixture, message, INGEST_SECRET, type IngestFixture } from './setup.js';

const WORKER = fileURLToPath(new URL('../../../bin/svcmail-worker.js', import.meta.url));
const backends = await storeBackends({ spawns: true });
const N = 30;

/** The real worker daemon as a process (NODE_ENV=test: unreachable scanners count as clean). */
async function startWorker(f: IngestFixture, env: Record<string, string> = {}): Promise<ChildProcess> {
  const sets = {
    ...datastoreOf(f.api.config),
    data_dir: f.dataDir,
    'auth:secret': 'test-secret-0123456789abcdef',
    'mail:transport:ingest:secret': INGEST_SECRET,
    'mail:jobs:wake_address': '',
    'mail:jobs:scan:interval_seconds': 0.5,
    'mail:jobs:scan:batch_size': 4,
    'mail:jobs:scan:concurrency': 2,
    'mail:jobs:scan:lease_seconds': 2,
    'log:level': 'warn',
    'mail:scan:rspamd:url': `http://127.0.0.1:${await freePort()}`,
    'mail:scan:clamd:address': `127.0.0.1:${await freePort()}`,
  };
  const args = Object.entries(sets).flatMap(([k, v]) => ['--set', `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`]);
  return spawn(process.execPath, [WORKER, ...args], {
    env: { ...process.env, NODE_ENV: 'test', ...env },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
}

const exited = (c: ChildProcess) =>
  new Promise<NodeJS.Signals | number | null>((r) =>
    c.exitCode !== null || c.signalCode ? r(c.signalCode ?? c.exitCode) : c.once('exit', (code, sig) => r(sig ?? code)),
  );

describe.each(backends)('worker killed mid-batch ($name)', (backend) => {
  let f: IngestFixture;
  let worker: ChildProcess | null = null;
  beforeAll(async () => {
    f = await ingestFixture(backend);
  });
  afterAll(async () => {
    if (worker && worker.exitCode === null) {
      worker.kill('SIGKILL');
      await exited(worker);
    }
    await f?.close();
  });

  it('after kill -9 and a restart every accepted message is filed exactly once', async () => {
    const txs = new Set<string>();
    for (let i = 0; i < N; i++) {
      const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: `crash ${i}` }), tx: `Q${i}` });
      expect(r.status).toBe(202);
      txs.add(r.body.transactionId);
    }
    const repo = f.api.deps.store.repo<IngestEntry>(IngestEntryModel);
    // First copy dies (SIGKILL) right after filing its 7th message, before releasing the entry.
    worker = await startWorker(f, { SVCMAIL_CRASH_AT: 'ingest.after-file:7' });
    expect(await exited(worker)).toBe('SIGKILL');
    const midway = await repo.count({ transactionId: { $in: [...txs] }, state: 'delivered' });
    expect(midway).toBeLessThan(N);
    expect(await repo.count({ claimedBy: { $ne: null } })).toBeGreaterThan(0); // leases left behind
    worker = await startWorker(f);
    const until = Date.now() + 60_000;
    while (Date.now() < until && (await repo.count({ transactionId: { $in: [...txs] }, state: 'delivered' })) < N)
      await new Promise((r) => setTimeout(r, 300));
    worker.kill('SIGTERM');
    await exited(worker);
    const rows = await repo.list({ filter: { transactionId: { $in: [...txs] } }, limit: 1000 });
    expect(rows.filter((e) => e.state === 'delivered')).toHaveLength(N);
    expect(new Set(rows.map((e) => e.messageUid)).size).toBe(N);
    const inbox = (await f.api.deps.store.repo<Folder>(FolderModel).findOne({ mailboxUid: f.users.aliceBox.uid, role: 'inbox' }))!;
    expect(inbox.totalCount).toBe(N);
  }, 120_000);
});
