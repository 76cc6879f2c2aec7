import { isApiError, type EasCollection, type Row } from '../api.js';
import type { EasRequest } from './command.js';
import { bodyPreferences, mimeSupportOf } from './mail-item.js';
import { kid, textOf } from './protocol.js';
import { changeKeyOf, dataOf, heldDiff, SYNC, type ItemContext, type Source } from './sync-source.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// One Sync round of a collection, whatever its source: the device's own commands applied, then
// the server's changes since what the device holds (or, for mail, the next page of the first fill).

const as = ns('AirSync');

export interface Round {
  commands: WbxmlElement[];
  responses: WbxmlElement[];
  more: boolean;
}

/** How the device wants items written, from a collection's Options. */
export const itemContext = (r: EasRequest, options: WbxmlElement | undefined): ItemContext => ({
  prefs: bodyPreferences(options),
  mimeSupport: mimeSupportOf(options),
  version: r.version,
});

const isGone = (e: unknown) => (isApiError(e) && e.status === 404) || (e as { code?: string }).code === 'api-107';

/** The Status a refused command gets: mail says "not found" for anything; records tell a bad item (6) from a missing one (8). */
const refusal = (source: Source, e: unknown) => (source.className === 'Email' || isGone(e) ? SYNC.notFound : SYNC.conversion);

async function applyOne(
  source: Source,
  cmd: WbxmlElement,
  c: WbxmlElement,
  held: Map<string, string>,
  x: ItemContext,
): Promise<WbxmlElement | null> {
  const id = textOf(cmd, 'ServerId') ?? '';
  const data = kid(cmd, 'ApplicationData');
  if (cmd.tag === 'Add') {
    const clientId = textOf(cmd, 'ClientId') ?? '';
    const made = await source.add(data, x);
    if (!made) return as('Add', [as('ClientId', clientId), as('Status', SYNC.conversion)]);
    held.set(made.uid, made.version);
    return as('Add', [as('ClientId', clientId), as('ServerId', made.uid), as('Status', SYNC.ok)]);
  }
  if (cmd.tag === 'Change') {
    const policy = textOf(kid(c, 'Options'), 'Conflict') === '0' ? 'client' : 'server';
    const version = await source.change(id, data, held.get(id), policy, x);
    // The server's version stays and goes back in this round's (or the next one's) Commands.
    if (version === 'conflict') return as('Change', [as('ServerId', id), as('Status', SYNC.conflict)]);
    held.set(id, version);
    return null;
  }
  if (cmd.tag === 'Delete') {
    const instanceId = textOf(cmd, 'InstanceId');
    const version = await source.remove(id, { deletesAsMoves: textOf(c, 'DeletesAsMoves') !== '0', instanceId });
    if (version === null) held.delete(id);
    else held.set(id, version);
    return null;
  }
  if (cmd.tag === 'Fetch') {
    const row = (await source.rows([id])).get(id);
    if (!row) throw Object.assign(new Error('gone'), { code: 'api-107' });
    return as('Fetch', [as('ServerId', id), as('Status', SYNC.ok), as('ApplicationData', await source.toData(row, x))]);
  }
  return null;
}

/** The device's own commands: applied, and what the held list must say afterwards. */
export async function applyClientCommands(
  source: Source,
  c: WbxmlElement,
  held: Map<string, string>,
  x: ItemContext,
): Promise<WbxmlElement[]> {
  const responses: WbxmlElement[] = [];
  for (const cmd of kid(c, 'Commands')?.children ?? []) {
    try {
      const answer = await applyOne(source, cmd, c, held, x);
      if (answer) responses.push(answer);
    } catch (e) {
      if (!(isApiError(e) || (e as { code?: string }).code === 'api-107')) throw e;
      // An item that is gone, out of reach or refused: the device is told, nothing else changes.
      const status = refusal(source, e);
      const id = textOf(cmd, 'ServerId') ?? '';
      if (cmd.tag === 'Add') responses.push(as('Add', [as('ClientId', textOf(cmd, 'ClientId') ?? ''), as('Status', status)]));
      else responses.push(as(cmd.tag, [as('ServerId', id), as('Status', status)]));
      // A refused Delete: forgotten all the same, so an item that still exists comes back as an Add.
      if (cmd.tag === 'Delete') held.delete(id);
    }
  }
  return responses;
}

/** The server's changes since the device's held list, at most `window` of them; `held` is updated. */
export async function serverChanges(
  source: Source,
  x: ItemContext,
  filterType: number,
  held: Map<string, string>,
  window: number,
): Promise<{ commands: WbxmlElement[]; more: boolean }> {
  // New items newest first: a phone shows the latest mail while the rest follows.
  const { deletes, changes, adds } = heldDiff(held, await source.keys(filterType));
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
  const rows: Map<string, Row> = await source.rows([...takeChanges, ...takeAdds]);
  for (const id of takeChanges) {
    const row = rows.get(id);
    if (!row) continue; // gone since the keys were read: the next round deletes it
    commands.push(as('Change', [as('ServerId', id), as('ApplicationData', await source.changeData(row, x))]));
    held.set(id, changeKeyOf(source, row));
  }
  const added = takeAdds.map((id) => rows.get(id)).filter((row): row is Row => row !== undefined);
  const data = await dataOf(source, added, x);
  added.forEach((row, i) => {
    const id = String(row.uid);
    commands.push(as('Add', [as('ServerId', id), as('ApplicationData', data[i])]));
    held.set(id, changeKeyOf(source, row));
  });
  const more = deletes.length + changes.length + adds.length > takeDeletes.length + takeChanges.length + takeAdds.length;
  return { commands, more };
}

/**
 * The first filling of a mail collection: the folder walked newest first from the cursor, `window`
 * items a round, without comparing the whole folder each time (what arrives, changes or goes
 * meanwhile is found by the first comparing round once the walk is done).
 */
export async function fillRound(
  source: Source & Required<Pick<Source, 'fillPage'>>,
  state: EasCollection,
  x: ItemContext,
  held: Map<string, string>,
  window: number,
): Promise<{ commands: WbxmlElement[]; more: boolean; cursor: string | null }> {
  const rows = await source.fillPage(state.cursor, state.filterType, window + 1);
  const page = rows.slice(0, window);
  const fresh = page.filter((row) => !held.has(String(row.uid))); // not moved in by the device itself meanwhile
  const data = await dataOf(source, fresh, x);
  const commands = fresh.map((row, i) => {
    held.set(String(row.uid), changeKeyOf(source, row));
    return as('Add', [as('ServerId', String(row.uid)), as('ApplicationData', data[i])]);
  });
  return { commands, more: rows.length > window, cursor: page.length ? String(page[page.length - 1].uid) : state.cursor };
}
