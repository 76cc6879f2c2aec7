import type { Filter, Store } from '../port.js';
import { BlobModel, type BlobStore } from './index.js';

const ID = /^[0-9a-f]{64}$/;

/**
 * Whether a blob is still needed: a record counts a reference to it (messages, BlobModel.refs), or
 * a record of a model that declares the field a blob holder names it (an inbound message waiting in
 * the queue for another mailbox, a quarantined copy, a relay or send job not yet handed over).
 */
export async function blobInUse(store: Store, id: string): Promise<boolean> {
  const row = await store.repo<{ refs: number }>(BlobModel).get(id);
  if (row && row.refs > 0) return true;
  for (const model of store.models())
    for (const h of model.blobHolders ?? [])
      if (await store.repo(model).count({ ...(h.while as Filter | undefined), [h.field]: id })) return true;
  return false;
}

/**
 * Frees the files of blobs nothing needs any more (call after the transaction that dropped the last
 * reference has committed). A freed file is set aside, not deleted: a writer that found the same
 * bytes already stored a moment earlier may be about to commit a record naming them, and
 * sweepReleasedBlobs puts such a file back. Answers how many files were set aside.
 */
export async function releaseBlobs(store: Store, blobs: BlobStore, ids: Iterable<string>): Promise<number> {
  let released = 0;
  for (const id of new Set(ids)) {
    if (!ID.test(id) || (await blobInUse(store, id))) continue;
    if (await blobs.setAside(id)) released += 1;
  }
  return released;
}

/**
 * Deletes released files older than the grace period that are still not needed; one needed again
 * (a record naming it was committed after it was released) goes back in its place. Files younger
 * than the grace period wait for the next sweep.
 */
export async function sweepReleasedBlobs(
  store: Store,
  blobs: BlobStore,
  opts: { graceMs: number; now?: number },
): Promise<{ deleted: number; restored: number }> {
  const cutoff = (opts.now ?? Date.now()) - opts.graceMs;
  const out = { deleted: 0, restored: 0 };
  for (const r of await blobs.released()) {
    if (await blobInUse(store, r.id)) {
      await blobs.restore(r);
      out.restored += 1;
    } else if (r.at <= cutoff) {
      await blobs.forget(r);
      out.deleted += 1;
    }
  }
  return out;
}
