import type { EasCollection, PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kid, kids, textOf, wbxml } from './protocol.js';
import { resolveSource } from './sources.js';
import { applyClientCommands, fillRound, itemContext, serverChanges, type Round } from './sync-round.js';
import { repeatedRequest, requestOutline } from './sync-cache.js';
import { outlineOf, replay } from './sync-replay.js';
import { SYNC, type Source } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Sync (MS-ASCMD 2.2.1.21) of mail folders, contacts, calendar and task lists (sources.ts). Per
// collection: SyncKey 0 starts over; the current key applies the device's changes and answers the
// server's changes since the last round, at most WindowSize of them, with MoreAvailable when more
// wait; the previous key is answered again from the saved round's outline (a device that lost an
// answer repeats its request; sync-replay.ts). What the device holds — item → change key — is the collection's
// EasCollectionChunk rows, so deletes and changes are found by comparing it with the collection.
// A mail folder's first filling walks it newest first from a cursor instead.

export { SYNC, sinceOf } from './sync-source.js';

const as = ns('AirSync');

const DEFAULT_WINDOW = 100;

/** One collection of a Sync request → its answer. */
async function syncCollection(r: EasRequest, c: WbxmlElement, globalWindow: number | null): Promise<WbxmlElement> {
  const key = textOf(c, 'SyncKey') ?? '';
  const collectionId = textOf(c, 'CollectionId') ?? '';
  const answer = (syncKey: string | number, status: number, round?: Round) =>
    as('Collection', [
      as('SyncKey', syncKey),
      as('CollectionId', collectionId),
      as('Status', status),
      ...(round?.commands.length ? [as('Commands', round.commands)] : []),
      ...(round?.responses.length ? [as('Responses', round.responses)] : []),
      ...(round?.more ? [as('MoreAvailable')] : []),
    ]);
  if (!/^\d{1,10}$/.test(key) || !collectionId) return answer(key, SYNC.protocolError);
  const source = await resolveSource(r, collectionId);
  if (!source) return answer(key, SYNC.notFound);
  const filterType = Number(textOf(kid(c, 'Options'), 'FilterType') ?? 0) || 0;
  const devices = r.caller.devices;

  if (key === '0') {
    // Starting over (iOS does it again for a collection it already had): a fresh state, nothing held.
    const state = await devices.saveCollection(r.device.uid, collectionId, {
      syncKey: 1,
      filterType,
      cursor: null,
      filled: false,
      heldCount: 0,
      previousKey: 0,
      previousRequest: '',
      previousAnswer: '',
    });
    await devices.setHeld(state, new Map());
    return answer(1, SYNC.ok);
  }
  const state = await devices.collection(r.device.uid, collectionId);
  if (state && Number(key) === state.previousKey && state.previousAnswer) {
    const again = await replay(state.previousAnswer, source, itemContext(r, kid(c, 'Options')));
    if (again) return answer(again.key, SYNC.ok, again.round);
  }
  if (!state || Number(key) !== state.syncKey) return answer(0, SYNC.invalidKey);
  return nextRound(r, c, source, state, filterType, globalWindow, answer);
}

async function nextRound(
  r: EasRequest,
  c: WbxmlElement,
  source: Source,
  state: EasCollection,
  filterType: number,
  globalWindow: number | null,
  answer: (key: number, status: number, round?: Round) => WbxmlElement,
): Promise<WbxmlElement> {
  const devices = r.caller.devices;
  const held = await devices.held(state);
  const x = itemContext(r, kid(c, 'Options'));
  const responses = await applyClientCommands(source, c, held, x);
  const getChanges = textOf(c, 'GetChanges') !== '0';
  const asked = Number(textOf(c, 'WindowSize') ?? globalWindow ?? DEFAULT_WINDOW) || DEFAULT_WINDOW;
  const window = Math.min(asked, r.host.setting('mail:eas:sync:max_window_size'));
  const { fillPage } = source;
  const filling = !!fillPage && !state.filled && filterType === state.filterType;
  const changes = !getChanges
    ? { commands: [], more: false, cursor: state.cursor }
    : filling
      ? await fillRound({ ...source, fillPage }, state, x, held, window)
      : { ...(await serverChanges(source, x, filterType, held, window)), cursor: null };
  const next = state.syncKey + 1;
  const element = answer(next, SYNC.ok, { commands: changes.commands, responses, more: changes.more });
  try {
    await devices.saveRound(state, held, {
      syncKey: next,
      filterType,
      heldCount: held.size,
      cursor: changes.cursor,
      // Filled once the walk ends; a comparing round (after it, or after a new filter) leaves it filled.
      filled: !getChanges ? state.filled : filling ? !changes.more : true,
      previousKey: state.syncKey,
      previousAnswer: outlineOf(next, { commands: changes.commands, responses, more: changes.more }),
    });
  } catch (e) {
    // Another request of this device ended a round of this collection meanwhile: this round is not
    // kept, and the device sends its key again (answered from that round when it is the same one).
    if ((e as { code?: string }).code !== 'api-108') throw e;
    return answer(state.syncKey, SYNC.retry);
  }
  return element;
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  // An empty Sync repeats the previous full one (sync-cache.ts); with none kept, the device is asked for the whole request.
  const body = r.body ?? (await repeatedRequest(r));
  if (!body) return wbxml(as('Sync', [as('Status', SYNC.incomplete)]));
  const collections = kids(kid(body, 'Collections'), 'Collection');
  if (!collections.length) return wbxml(as('Sync', [as('Status', SYNC.protocolError)]));
  const globalWindow = textOf(body, 'WindowSize');
  const answers: WbxmlElement[] = [];
  for (const c of collections) answers.push(await syncCollection(r, c, globalWindow ? Number(globalWindow) : null));
  await r.caller.devices.update(r.device.uid, { lastSyncAt: new Date(), ...(r.body ? { lastSyncRequest: requestOutline(r.body) } : {}) });
  return wbxml(as('Sync', [as('Collections', answers)]));
}

export const sync: EasCommand = { root: { page: 'AirSync', tag: 'Sync' }, handle };
