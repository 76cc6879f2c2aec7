import { hostname } from 'node:os';
import type { Deps } from '../context/index.js';
import { IngestEntryModel } from '../ingest/index.js';
import { OutboundJobModel } from '../send/index.js';
import { isAlive, listHeartbeats } from '../settings/index.js';
import type { ModelDef, Store } from '../storage/index.js';

// A worker killed while holding leases (kill -9, a power cut) leaves its claimed entries untouched
// until the leases end (mail:jobs:scan:lease_seconds, 120 s). The workers write heartbeats, and a
// lease's owner names its process (workerId(): host:pid:random), so a worker can tell a dead holder
// from a slow one: on the same host, a pid that no longer exists; on another host, a heartbeat
// record that stopped (or says the process stopped). Their leases are ended at once, and the next
// claim takes the records. A holder that was only slow is fenced: its release names it as owner
// and no longer matches once another worker claimed the record, and filing recognises a copy that
// was filed already (idempotency keys), so nothing is filed or sent twice. (Copies that share a
// host name share a PID namespace — give containers host names of their own.)

/** Lease owners a worker writes (lib/jobs/scan.ts workerId): host, pid, six hex digits. */
const OWNER = /^(.+):(\d+):[0-9a-f]{6}$/;

/** The models whose records workers claim with a lease. */
const LEASED: ModelDef[] = [IngestEntryModel, OutboundJobModel];

function pidGone(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return false;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'ESRCH';
  }
}

/** Whether the process that owns the lease is known to be dead; unknown counts as alive. */
async function ownerDead(store: Store, owner: string, self: string, now: Date): Promise<boolean> {
  const m = OWNER.exec(owner);
  if (!m || owner === self) return false;
  const [, host, pid] = m;
  if (host === hostname()) return pidGone(Number(pid));
  const beat = (await listHeartbeats(store, { daemon: 'worker' })).find((h) => h.instance === `${host}:${pid}`);
  return beat !== undefined && !isAlive(beat, now.getTime());
}

/**
 * Ends the leases of dead owners on every leased model; answers how many records were freed. The
 * records keep their owner (a late release by it still matches until someone claims them again).
 */
export async function takeOverDeadLeases(deps: Pick<Deps, 'store'>, self: string, now = new Date()): Promise<number> {
  let freed = 0;
  const verdicts = new Map<string, boolean>();
  for (const model of LEASED) {
    const repo = deps.store.repo<{ claimedBy: string | null }>(model);
    const held = await repo.list({ filter: { leaseUntil: { $gt: now } }, limit: 10_000 });
    for (const owner of new Set(held.map((r) => r.claimedBy).filter((o): o is string => !!o))) {
      if (!verdicts.has(owner)) verdicts.set(owner, await ownerDead(deps.store, owner, self, now));
      if (verdicts.get(owner))
        freed += await repo.updateMany({ claimedBy: owner, leaseUntil: { $gt: now } }, {
          leaseUntil: new Date(now.getTime() - 1),
        } as never);
    }
  }
  return freed;
}

export interface LeaseTakeover {
  stop(): Promise<void>;
}

/**
 * Looks for dead holders at start (a worker restarted after kill -9 takes its predecessor's records
 * at once) and then every heartbeat period; wakes the jobs when it freed something.
 */
export function startLeaseTakeover(deps: Pick<Deps, 'store' | 'log' | 'config'>, self: string, wake: () => void): LeaseTakeover {
  let running: Promise<void> | null = null;
  const tick = () => {
    if (running) return;
    running = takeOverDeadLeases(deps, self)
      .then((n) => {
        if (!n) return;
        deps.log.warn({ records: n }, 'took over the leases of a worker that is gone');
        wake();
      })
      .catch((e: unknown) => deps.log.warn({ err: (e as Error).message }, 'lease takeover check failed'))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, deps.config.get('mail:heartbeat:interval_seconds') * 1000);
  timer.unref();
  setImmediate(tick);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
