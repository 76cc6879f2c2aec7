import { isApiError, type PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kids, textOf, wbxml } from './protocol.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// MoveItems (MS-ASCMD 2.2.1.12): messages moved between folders of the mailbox. Item ids stay the
// same across a move (they are message uids), and the device's held lists of both collections are
// updated, so its next Sync of either folder does not answer the move back as a delete and an add.

const mv = ns('Move');

/** MoveItems Status values. */
const STATUS = { badSource: 1, badDestination: 2, ok: 3, same: 4, failed: 5 } as const;

async function moveOne(r: EasRequest, m: WbxmlElement): Promise<WbxmlElement> {
  const id = textOf(m, 'SrcMsgId') ?? '';
  const from = textOf(m, 'SrcFldId') ?? '';
  const to = textOf(m, 'DstFldId') ?? '';
  const answer = (status: number) =>
    mv('Response', [mv('SrcMsgId', id), mv('Status', status), ...(status === STATUS.ok ? [mv('DstMsgId', id)] : [])]);
  if (!id || !r.device.folders[from]) return answer(STATUS.badSource);
  if (!r.device.folders[to]) return answer(STATUS.badDestination);
  if (from === to) return answer(STATUS.same);
  let moved;
  try {
    const [msg] = await r.caller.folderItems(from, { uids: [id], limit: 1 });
    if (!msg) return answer(STATUS.badSource);
    moved = await r.caller.moveMessage(id, to);
  } catch (e) {
    if (isApiError(e)) return answer(e.status === 404 ? STATUS.badSource : STATUS.failed);
    throw e;
  }
  for (const [folder, change] of [
    [from, (h: Map<string, string>) => h.delete(id)],
    [to, (h: Map<string, string>) => h.set(id, String(moved.version))],
  ] as const) {
    const state = await r.caller.devices.collection(r.device.uid, folder);
    if (!state) continue;
    const held = await r.caller.devices.held(state);
    change(held);
    await r.caller.devices.setHeld(state, held);
  }
  return answer(STATUS.ok);
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const moves = kids(r.body ?? undefined, 'Move');
  const out: WbxmlElement[] = [];
  for (const m of moves) out.push(await moveOne(r, m));
  return wbxml(mv('MoveItems', out));
}

export const moveItems: EasCommand = { root: { page: 'Move', tag: 'MoveItems' }, handle };
