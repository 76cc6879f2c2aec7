import type { EasCollection } from '../api.js';
import type { EasRequest } from './command.js';
import { sinceOf } from './sync.js';

/** How many adds, changes and deletes a collection's next Sync would answer (what the device holds vs the folder). */
export async function pendingChanges(r: EasRequest, state: EasCollection): Promise<number> {
  const [held, now] = await Promise.all([
    r.caller.devices.held(state.uid),
    r.caller.folderKeys(state.folderUid, sinceOf(state.filterType)),
  ]);
  let n = 0;
  for (const [k, v] of now) if (held.get(k) !== v) n += 1; // added or changed
  for (const k of held.keys()) if (!now.has(k)) n += 1; // deleted
  return n;
}
