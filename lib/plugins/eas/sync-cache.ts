import type { EasRequest } from './command.js';
import { kid, kids, textOf } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// An empty Sync request repeats the previous one (MS-ASCMD 2.2.1.21: clients send one when nothing
// changed on their side): what is kept of a full request is its collections — ids, options,
// window sizes, flags — without their keys and commands; repeated, each collection takes the key
// the server's last answer gave it.

const as = ns('AirSync');

/** What is kept of a full Sync request (DeviceSyncState.lastSyncRequest). */
export function requestOutline(body: WbxmlElement): string {
  const collections = kids(kid(body, 'Collections'), 'Collection').map((c) => ({
    ...c,
    children: (c.children ?? []).filter((x) => x.tag !== 'SyncKey' && x.tag !== 'Commands'),
  }));
  const window = textOf(body, 'WindowSize');
  return JSON.stringify({ collections, window: window ?? null });
}

/** The previous full request again, each collection at the key it holds now; null when none is kept. */
export async function repeatedRequest(r: EasRequest): Promise<WbxmlElement | null> {
  if (!r.device.lastSyncRequest) return null;
  const kept = JSON.parse(r.device.lastSyncRequest) as { collections: WbxmlElement[]; window: string | null };
  const collections: WbxmlElement[] = [];
  for (const c of kept.collections) {
    const state = await r.caller.devices.collection(r.device.uid, textOf(c, 'CollectionId') ?? '');
    if (state) collections.push(as('Collection', [as('SyncKey', state.syncKey), ...(c.children ?? [])]));
  }
  if (!collections.length) return null;
  return as('Sync', [as('Collections', collections), ...(kept.window ? [as('WindowSize', kept.window)] : [])]);
}
