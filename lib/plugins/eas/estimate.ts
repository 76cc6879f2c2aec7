import type { PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { pendingChanges } from './pending.js';
import { kid, kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// GetItemEstimate (MS-ASCMD 2.2.1.9): how many changes each collection's next Sync would bring.

const ge = ns('GetItemEstimate');

/** GetItemEstimate Status values. */
const STATUS = { ok: 1, badCollection: 2, notPrimed: 3, badKey: 4 } as const;

async function estimate(r: EasRequest, c: WbxmlElement): Promise<WbxmlElement> {
  const id = textOf(c, 'CollectionId') ?? '';
  const key = textOf(c, 'SyncKey');
  const answer = (status: number, n?: number) =>
    ge('Response', [ge('Status', status), ge('Collection', [ge('CollectionId', id), ...(n === undefined ? [] : [ge('Estimate', n)])])]);
  if (!id || !r.device.folders[id]) return answer(STATUS.badCollection);
  if (key === '0') return answer(STATUS.notPrimed);
  const state = await r.caller.devices.collection(r.device.uid, id);
  if (!state) return answer(STATUS.notPrimed);
  if (key !== undefined && Number(key) !== state.syncKey) return answer(STATUS.badKey);
  return answer(STATUS.ok, await pendingChanges(r, state));
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const collections = kids(kid(r.body ?? undefined, 'Collections'), 'Collection');
  if (!collections.length) return wbxml(ge('GetItemEstimate', [ge('Status', STATUS.badCollection)]));
  const out: WbxmlElement[] = [];
  for (const c of collections) out.push(await estimate(r, c));
  return wbxml(ge('GetItemEstimate', out));
}

export const getItemEstimate: EasCommand = { root: { page: 'GetItemEstimate', tag: 'GetItemEstimate' }, handle };
