import type { Deps } from '../context/index.js';
import type { PeriodicJob } from '../jobs/index.js';
import { EasChunkModel, EasCollectionModel, EasDeviceModel } from './device-models.js';

/**
 * Spec: Limits — mobile-sync device state is kept 90 days without a sync
 * (mail:jobs:eas_device_cleanup:device_ttl_days). Older devices are forgotten with their
 * collections; such a device starts over (Provision, FolderSync and Sync from 0) if it comes back.
 */
export function deviceCleanupJob(deps: Deps): PeriodicJob<{ removed: number }> {
  const periodMs = deps.config.get('mail:jobs:eas_device_cleanup:interval_seconds') * 1000;
  return {
    name: 'eas-device-cleanup',
    periodMs,
    leaseMs: Math.max(periodMs, 300_000),
    run: () => removeIdleDevices(deps, Date.now() - deps.config.get('mail:jobs:eas_device_cleanup:device_ttl_days') * 86_400_000),
  };
}

/** Devices last seen before `cutoff` (ms), or never synced and made before it. */
export async function removeIdleDevices(deps: Pick<Deps, 'store'>, cutoff: number): Promise<{ removed: number }> {
  const before = new Date(cutoff);
  const repo = deps.store.repo(EasDeviceModel);
  const idle = [
    ...(await repo.list({ filter: { lastSyncAt: { $lt: before } }, limit: 1000 })),
    ...(await repo.list({ filter: { lastSyncAt: null, createdAt: { $lt: before } }, limit: 1000 })),
  ];
  for (const d of idle)
    await deps.store.transaction(async (tx) => {
      for (const c of await tx.repo(EasCollectionModel).list({ filter: { deviceUid: d.uid }, limit: 10_000 })) {
        await tx.repo(EasChunkModel).deleteMany({ collectionUid: c.uid });
        await tx.repo(EasCollectionModel).delete(c.uid);
      }
      await tx.repo(EasDeviceModel).delete(d.uid);
    });
  return { removed: idle.length };
}
