// A dead worker's leases are taken over at once, a live one's never (lib/jobs/lease-takeover.ts):
// on this host a process that no longer exists, on another host a heartbeat that stopped. Real
// processes (one started and reaped here gives a pid that is gone), real store, both SQL engines.
import { spawnSync } from 'node:child_process';
import { hostname } from 'node:os';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IngestEntryModel, type IngestEntry, type WorkerDeps } from '../../../lib/ingest/index.js';
import { drainQueue } from '../../../lib/jobs/index.js';
import { takeOverDeadLeases } from '../../../lib/jobs/lease-takeover.js';
import { HeartbeatModel, instanceUid, type Heartbeat } from '../../../lib/settings/index.js';
import type { LeaseFields } from '../../../lib/storage/index.js';
import { sqlBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';

const backends = await sqlBackends();
/** A pid that existed a moment ago and is gone now. */
const deadPid = () => spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout;

describe.each(backends)('taking over the leases of a worker that is gone ($name)', (backend) => {
  let f: IngestFixture;
  let w: WorkerDeps;
  const entries = () => f.api.deps.store.repo<IngestEntry & LeaseFields>(IngestEntryModel);
  beforeAll(async () => {
    f = await ingestFixture(backend);
    w = f.worker({ scanners: 'clean' });
  });
  afterAll(async () => f?.close());

  /** Hands off n messages and claims their entries as `owner` with a 10-minute lease. */
  const heldBy = async (owner: string, n: number) => {
    const txs: string[] = [];
    for (let i = 0; i < n; i++) {
      const r = await f.deliver({ to: ['alice@example.test'], raw: message({ subject: `${owner} ${i}` }) });
      txs.push(r.body.transactionId as string);
    }
    const claimed = await entries().claim({ transactionId: { $in: txs } }, { owner, leaseMs: 600_000, limit: n });
    expect(claimed).toHaveLength(n);
    return txs;
  };
  const beat = (host: string, pid: number, lastSeenAt: Date) =>
    f.api.deps.store.repo<Heartbeat>(HeartbeatModel).create({
      uid: instanceUid(`${host}:${pid}`),
      daemon: 'worker',
      instance: `${host}:${pid}`,
      host,
      pid,
      productVersion: 'test',
      startedAt: lastSeenAt,
      lastSeenAt,
      intervalSeconds: 30,
      stoppedAt: null,
      details: {},
    } as Heartbeat & { uid: string });
  const states = async (txs: string[]) => (await entries().list({ filter: { transactionId: { $in: txs } } })).map((e) => e.state);

  it('on this host: a holder whose process is gone loses its leases at once, and its mail is filed', async () => {
    const owner = `${hostname()}:${deadPid()}:a1b2c3`;
    const txs = await heldBy(owner, 3);
    await drainQueue(w, 'other-worker');
    expect(await states(txs), 'leased: nobody else may take them').toEqual(['queued', 'queued', 'queued']);
    expect(await takeOverDeadLeases(f.api.deps, 'other-worker')).toBe(3);
    await drainQueue(w, 'other-worker');
    expect(await states(txs)).toEqual(['delivered', 'delivered', 'delivered']);
  });

  it('on another host: a holder whose heartbeat stopped loses its leases; one still beating keeps them', async () => {
    const stale = await heldBy('mx2.example.test:4242:0a0b0c', 2);
    const live = await heldBy('mx3.example.test:4343:0d0e0f', 2);
    await beat('mx2.example.test', 4242, new Date(Date.now() - 10 * 60_000));
    await beat('mx3.example.test', 4343, new Date());
    expect(await takeOverDeadLeases(f.api.deps, 'other-worker')).toBe(2);
    await drainQueue(w, 'other-worker');
    expect(await states(stale)).toEqual(['delivered', 'delivered']);
    expect(await states(live)).toEqual(['queued', 'queued']);
  });

  it('never takes over a live process on this host, itself, an owner it cannot place, or a host without a heartbeat record', async () => {
    const mine = await heldBy(`${hostname()}:${process.pid}:aaaaaa`, 1);
    const self = await heldBy(`${hostname()}:${deadPid()}:bbbbbb`, 1);
    const foreign = await heldBy('test-worker', 1);
    const unknown = await heldBy('mx9.example.test:99:cccccc', 1);
    const selfOwner = (await entries().findOne({ transactionId: self[0] }))!.claimedBy!;
    expect(await takeOverDeadLeases(f.api.deps, selfOwner)).toBe(0);
    for (const txs of [mine, self, foreign, unknown]) {
      const e = (await entries().findOne({ transactionId: txs[0] }))!;
      expect(e.leaseUntil!.getTime()).toBeGreaterThan(Date.now());
    }
  });
});
