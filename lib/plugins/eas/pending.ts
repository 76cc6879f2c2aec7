import type { EasCollection } from '../api.js';
import type { EasRequest } from './command.js';
import { resolveSource } from './sources.js';
import type { Source } from './sync-source.js';

/** How many adds, changes and deletes a collection's next Sync would answer (what the device holds vs the collection). */
export async function pendingChanges(r: EasRequest, state: EasCollection, known?: Source | null): Promise<number> {
  const source = known ?? (await resolveSource(r, state.folderUid, true));
  if (!source) return 0; // gone since FolderSync: the device learns it there
  const [held, now] = await Promise.all([r.caller.devices.held(state.uid), source.keys(state.filterType)]);
  let n = 0;
  for (const [k, v] of now) if (held.get(k) !== v) n += 1; // added or changed
  for (const k of held.keys()) if (!now.has(k)) n += 1; // deleted
  return n;
}
