import type { Deps } from '../context/index.js';
import { blobsOf } from '../mail/index.js';
import { sweepReleasedBlobs } from '../storage/index.js';
import type { PeriodicJob } from './periodic.js';

/**
 * The worker's schedule of the blob sweep (mail:jobs:blob_sweep:*): released raw messages
 * (lib/storage/blob/release.ts) are deleted once their grace period is over, or put back when a
 * record needs them again.
 */
export function blobSweepJob(deps: Deps): PeriodicJob<{ deleted: number; restored: number }> {
  const periodMs = deps.config.get('mail:jobs:blob_sweep:interval_seconds') * 1000;
  return {
    name: 'blob-sweep',
    periodMs,
    leaseMs: Math.max(periodMs, 300_000),
    run: () => sweepReleasedBlobs(deps.store, blobsOf(deps), { graceMs: deps.config.get('mail:jobs:blob_sweep:grace_seconds') * 1000 }),
  };
}
