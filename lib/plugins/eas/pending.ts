import type { EasCollection } from '../api.js';
import type { EasRequest } from './command.js';
import { resolveSource } from './sources.js';
import { heldDiff, type Source } from './sync-source.js';

/** How many adds, changes and deletes a collection's next Sync would answer (what the device holds vs the collection). */
export async function pendingChanges(r: EasRequest, state: EasCollection, known?: Source | null): Promise<number> {
  const source = known ?? (await resolveSource(r, state.folderUid, true));
  if (!source) return 0; // gone since FolderSync: the device learns it there
  const [held, now] = await Promise.all([r.caller.devices.held(state), source.keys(state.filterType)]);
  const d = heldDiff(held, now);
  return d.deletes.length + d.changes.length + d.adds.length;
}
