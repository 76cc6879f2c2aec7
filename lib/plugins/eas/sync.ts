import { isApiError, type EasCollection, type PluginResponse, type Row } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { bodyPreferences, clientMailChange, mailChange, mailData, mimeSupportOf } from './mail-item.js';
import { empty, kid, kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// Sync (MS-ASCMD 2.2.1.21) for mail folders. Per collection: SyncKey 0 starts over; the current key
// applies the device's changes (read, flag, delete — as a move to Deleted Items unless the device
// says otherwise) and answers the server's changes since the last round, at most WindowSize of
// them, with MoreAvailable when more wait; the previous key is answered again from the saved round
// (a device that lost an answer repeats its request). What the device holds — item → change key —
// is the collection's EasCollectionChunk rows, so deletes and changes are found by comparing it
// with the folder.

const as = ns('AirSync');

/** Sync Status values (MS-ASCMD 2.2.3.177.17). */
export const SYNC = {
  ok: 1,
  invalidKey: 3,
  protocolError: 4,
  serverError: 5,
  conversion: 6,
  notFound: 8,
  hierarchyChanged: 12,
  incomplete: 13,
  badWait: 14,
} as const;

const DEFAULT_WINDOW = 100;

/** FilterType → how far back items reach (MS-ASCMD 2.2.3.68.2); 0 and unknown values: everything. */
const FILTER_DAYS: Record<number, number> = { 1: 1, 2: 3, 3: 7, 4: 14, 5: 31, 6: 92, 7: 183 };
export const sinceOf = (filterType: number) =>
  FILTER_DAYS[filterType] ? new Date(Date.now() - FILTER_DAYS[filterType] * 86_400_000) : null;

interface Round {
  commands: WbxmlElement[];
  responses: WbxmlElement[];
  more: boolean;
}

/** The device's own commands: applied, and what the held list must say afterwards. */
async function applyClientCommands(r: EasRequest, c: WbxmlElement, held: Map<string, string>): Promise<WbxmlElement[]> {
  const responses: WbxmlElement[] = [];
  const deletesAsMoves = textOf(c, 'DeletesAsMoves') !== '0';
  for (const cmd of kid(c, 'Commands')?.children ?? []) {
    const id = textOf(cmd, 'ServerId') ?? '';
    try {
      if (cmd.tag === 'Change') {
        const row = await r.caller.setFlags(id, clientMailChange(kid(cmd, 'ApplicationData')));
        held.set(id, String(row.version));
      } else if (cmd.tag === 'Delete') {
        if (deletesAsMoves) await r.caller.trashMessage(id);
        else await r.caller.deleteMessage(id);
        held.delete(id);
      } else if (cmd.tag === 'Add') {
        // Mail is never created by a device through Sync (drafts go through SendMail).
        responses.push(as('Add', [as('ClientId', textOf(cmd, 'ClientId') ?? ''), as('Status', SYNC.conversion)]));
      } else if (cmd.tag === 'Fetch') {
        const [row] = await r.caller.folderItems(textOf(c, 'CollectionId') ?? '', { uids: [id], limit: 1 });
        if (!row) throw Object.assign(new Error('gone'), { code: 'api-107' });
        const options = kid(c, 'Options');
        const data = await mailData(r.caller, row, bodyPreferences(options), mimeSupportOf(options));
        responses.push(as('Fetch', [as('ServerId', id), as('Status', SYNC.ok), as('ApplicationData', data)]));
      }
    } catch (e) {
      if (!(isApiError(e) || (e as { code?: string }).code === 'api-107')) throw e;
      // A message that is gone or out of reach: the device is told, nothing else changes.
      if (cmd.tag !== 'Add') responses.push(as(cmd.tag, [as('ServerId', id), as('Status', SYNC.notFound)]));
      if (cmd.tag === 'Delete') held.delete(id);
    }
  }
  return responses;
}

/** The server's changes since the device's held list, at most `window` of them; `held` is updated. */
async function serverChanges(
  r: EasRequest,
  folderUid: string,
  options: WbxmlElement | undefined,
  filterType: number,
  held: Map<string, string>,
  window: number,
): Promise<{ commands: WbxmlElement[]; more: boolean }> {
  const keys = await r.caller.folderKeys(folderUid, sinceOf(filterType));
  const deletes = [...held.keys()].filter((k) => !keys.has(k));
  const changes = [...held.entries()].filter(([k, v]) => keys.has(k) && keys.get(k) !== v).map(([k]) => k);
  // Newest first (uids grow with time): a phone shows the latest mail while the rest follows.
  const adds = [...keys.keys()].filter((k) => !held.has(k)).reverse();
  const commands: WbxmlElement[] = [];
  const takeDeletes = deletes.slice(0, window);
  for (const id of takeDeletes) {
    commands.push(as('Delete', [as('ServerId', id)]));
    held.delete(id);
  }
  let room = window - takeDeletes.length;
  const takeChanges = changes.slice(0, room);
  room -= takeChanges.length;
  const takeAdds = adds.slice(0, room);
  const wanted = [...takeChanges, ...takeAdds];
  const rows = new Map<string, Row>();
  for (let i = 0; i < wanted.length; i += 500)
    for (const row of await r.caller.folderItems(folderUid, { uids: wanted.slice(i, i + 500), limit: 500 })) rows.set(String(row.uid), row);
  const prefs = bodyPreferences(options);
  const mime = mimeSupportOf(options);
  for (const id of takeChanges) {
    const row = rows.get(id);
    if (!row) continue; // gone since the keys were read: the next round deletes it
    commands.push(as('Change', [as('ServerId', id), as('ApplicationData', mailChange(row))]));
    held.set(id, String(row.version));
  }
  for (const id of takeAdds) {
    const row = rows.get(id);
    if (!row) continue;
    commands.push(as('Add', [as('ServerId', id), as('ApplicationData', await mailData(r.caller, row, prefs, mime))]));
    held.set(id, String(row.version));
  }
  const more = deletes.length + changes.length + adds.length > takeDeletes.length + takeChanges.length + takeAdds.length;
  return { commands, more };
}

/**
 * The first filling of a collection: the folder walked newest first from the cursor, `window` items
 * a round, without comparing the whole folder each time (what arrives, changes or goes meanwhile is
 * found by the first comparing round once the walk is done).
 */
async function fillRound(
  r: EasRequest,
  state: EasCollection,
  options: WbxmlElement | undefined,
  held: Map<string, string>,
  window: number,
): Promise<{ commands: WbxmlElement[]; more: boolean; cursor: string | null }> {
  const rows = await r.caller.folderItems(state.folderUid, {
    before: state.cursor,
    newestFirst: true,
    since: sinceOf(state.filterType),
    limit: window + 1,
  });
  const page = rows.slice(0, window);
  const prefs = bodyPreferences(options);
  const mime = mimeSupportOf(options);
  const commands: WbxmlElement[] = [];
  for (const row of page) {
    const id = String(row.uid);
    if (held.has(id)) continue; // moved in by the device itself meanwhile
    commands.push(as('Add', [as('ServerId', id), as('ApplicationData', await mailData(r.caller, row, prefs, mime))]));
    held.set(id, String(row.version));
  }
  return { commands, more: rows.length > window, cursor: page.length ? String(page[page.length - 1].uid) : state.cursor };
}

/** One collection of a Sync request → its answer. */
async function syncCollection(r: EasRequest, c: WbxmlElement, globalWindow: number | null): Promise<WbxmlElement> {
  const key = textOf(c, 'SyncKey') ?? '';
  const folderUid = textOf(c, 'CollectionId') ?? '';
  const answer = (syncKey: string | number, status: number, round?: Round) =>
    as('Collection', [
      as('SyncKey', syncKey),
      as('CollectionId', folderUid),
      as('Status', status),
      ...(round?.commands.length ? [as('Commands', round.commands)] : []),
      ...(round?.responses.length ? [as('Responses', round.responses)] : []),
      ...(round?.more ? [as('MoreAvailable')] : []),
    ]);
  if (!/^\d{1,10}$/.test(key) || !folderUid) return answer(key, SYNC.protocolError);
  const folder = await r.caller.folder(folderUid).catch((e: unknown) => {
    if (isApiError(e)) return null;
    throw e;
  });
  if (!folder || folder.mailboxUid !== r.mailboxUid) return answer(key, SYNC.notFound);
  const options = kid(c, 'Options');
  const filterType = Number(textOf(options, 'FilterType') ?? 0) || 0;
  const devices = r.caller.devices;

  if (key === '0') {
    // Starting over (iOS does it again for a collection it already had): a fresh state, nothing held.
    const state = await devices.saveCollection(r.device.uid, folderUid, {
      syncKey: 1,
      filterType,
      cursor: null,
      filled: false,
      heldCount: 0,
      previousKey: 0,
      previousRequest: '',
      previousAnswer: '',
    });
    await devices.setHeld(state.uid, new Map());
    return answer(1, SYNC.ok);
  }
  const state = await devices.collection(r.device.uid, folderUid);
  if (state && Number(key) === state.previousKey && state.previousAnswer) return JSON.parse(state.previousAnswer, revive) as WbxmlElement;
  if (!state || Number(key) !== state.syncKey) return answer(0, SYNC.invalidKey);
  return nextRound(r, c, state, filterType, globalWindow, answer);
}

async function nextRound(
  r: EasRequest,
  c: WbxmlElement,
  state: EasCollection,
  filterType: number,
  globalWindow: number | null,
  answer: (key: number, status: number, round?: Round) => WbxmlElement,
): Promise<WbxmlElement> {
  const devices = r.caller.devices;
  const held = await devices.held(state.uid);
  const responses = await applyClientCommands(r, c, held);
  const getChanges = textOf(c, 'GetChanges') !== '0';
  const asked = Number(textOf(c, 'WindowSize') ?? globalWindow ?? DEFAULT_WINDOW) || DEFAULT_WINDOW;
  const window = Math.min(asked, r.host.setting('mail:eas:sync:max_window_size'));
  const options = kid(c, 'Options');
  const filling = !state.filled && filterType === state.filterType;
  const changes = !getChanges
    ? { commands: [], more: false, cursor: state.cursor }
    : filling
      ? await fillRound(r, state, options, held, window)
      : { ...(await serverChanges(r, state.folderUid, options, filterType, held, window)), cursor: null };
  const next = state.syncKey + 1;
  const element = answer(next, SYNC.ok, { commands: changes.commands, responses, more: changes.more });
  await devices.setHeld(state.uid, held);
  await devices.saveCollection(r.device.uid, state.folderUid, {
    syncKey: next,
    filterType,
    heldCount: held.size,
    cursor: changes.cursor,
    // Filled once the walk ends; a comparing round (after it, or after a new filter) leaves it filled.
    filled: !getChanges ? state.filled : filling ? !changes.more : true,
    previousKey: state.syncKey,
    previousAnswer: JSON.stringify(element, replace),
  });
  return element;
}

/** Saved answers keep opaque data (MIME) as base64. */
function replace(this: unknown, k: string, v: unknown): unknown {
  if (k === 'opaque' && v && typeof v === 'object' && (v as { type?: string }).type === 'Buffer')
    return { base64: Buffer.from((v as { data: number[] }).data).toString('base64') };
  return v;
}
function revive(k: string, v: unknown): unknown {
  return k === 'opaque' && v && typeof v === 'object' && 'base64' in v
    ? Buffer.from(String((v as { base64: string }).base64), 'base64')
    : v;
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  // An empty Sync repeats the previous one (MS-ASCMD 2.2.1.21): not kept here, so the device is asked for the whole request.
  if (!r.body) return wbxml(as('Sync', [as('Status', SYNC.incomplete)]));
  const collections = kids(kid(r.body, 'Collections'), 'Collection');
  if (!collections.length) return wbxml(as('Sync', [as('Status', SYNC.protocolError)]));
  const globalWindow = textOf(r.body, 'WindowSize');
  const answers: WbxmlElement[] = [];
  for (const c of collections) answers.push(await syncCollection(r, c, globalWindow ? Number(globalWindow) : null));
  await r.caller.devices.update(r.device.uid, { lastSyncAt: new Date() });
  return answers.length ? wbxml(as('Sync', [as('Collections', answers)])) : empty();
}

export const sync: EasCommand = { root: { page: 'AirSync', tag: 'Sync' }, handle };
