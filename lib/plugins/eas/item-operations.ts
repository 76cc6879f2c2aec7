import { isApiError, type PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { kid, textOf, wbxml } from './protocol.js';
import { resolveSource } from './sources.js';
import { itemContext } from './sync-round.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// ItemOperations (MS-ASCMD 2.2.1.10): Fetch of a whole message (in the body format asked, MIME
// included) or contact, event or task (a collection's item, sources.ts), or of an attachment by its FileReference (`<message uid>:<attachment id>`, as Sync
// hands them out), inline as base64; and EmptyFolderContents. Document libraries and search
// results (LongId) are not served here: their Fetch answers "object not found" (6).

const io = ns('ItemOperations');
const as = ns('AirSync');
const asb = ns('AirSyncBase');

/** ItemOperations Status values. */
const STATUS = { ok: 1, protocol: 2, notFound: 6, storeUnknown: 9, badReference: 15 } as const;

async function fetchAttachment(r: EasRequest, ref: string): Promise<WbxmlElement> {
  const answer = (status: number, props: WbxmlElement[] = []) =>
    io('Fetch', [io('Status', status), asb('FileReference', ref), ...(props.length ? [io('Properties', props)] : [])]);
  const m = /^([^:]+):(\d+)$/.exec(ref);
  if (!m) return answer(STATUS.badReference);
  try {
    const a = await r.caller.attachment(m[1], m[2]);
    return answer(STATUS.ok, [asb('ContentType', a.contentType), io('Data', a.data.toString('base64'))]);
  } catch (e) {
    if (isApiError(e)) return answer(STATUS.badReference);
    throw e;
  }
}

async function fetchMessage(r: EasRequest, f: WbxmlElement): Promise<WbxmlElement> {
  const folder = textOf(f, 'CollectionId') ?? '';
  const id = textOf(f, 'ServerId') ?? '';
  const head = [as('CollectionId', folder), as('ServerId', id)];
  if (!id || !folder || !r.device.folders[folder]) return io('Fetch', [io('Status', STATUS.notFound), ...head]);
  const source = await resolveSource(r, folder);
  const row = source && (await source.rows([id])).get(id);
  if (!source || !row) return io('Fetch', [io('Status', STATUS.notFound), ...head]);
  const data = await source.toData(row, itemContext(r, kid(f, 'Options')));
  return io('Fetch', [io('Status', STATUS.ok), ...head, as('Class', source.className), io('Properties', data)]);
}

async function operation(r: EasRequest, op: WbxmlElement): Promise<WbxmlElement> {
  if (op.tag === 'Fetch') {
    if ((textOf(op, 'Store') ?? '').toLowerCase() !== 'mailbox') return io('Fetch', [io('Status', STATUS.storeUnknown)]);
    const ref = textOf(op, 'FileReference');
    if (ref !== undefined) return fetchAttachment(r, ref);
    if (kid(op, 'LongId')) return io('Fetch', [io('Status', STATUS.notFound)]);
    return fetchMessage(r, op);
  }
  if (op.tag === 'EmptyFolderContents') {
    const folder = textOf(op, 'CollectionId') ?? '';
    const answer = (status: number) => io('EmptyFolderContents', [io('Status', status), as('CollectionId', folder)]);
    if (!r.device.folders[folder]) return answer(STATUS.notFound);
    try {
      await r.caller.emptyFolder(folder);
    } catch (e) {
      if (isApiError(e)) return answer(STATUS.notFound);
      throw e;
    }
    return answer(STATUS.ok);
  }
  return io('Fetch', [io('Status', STATUS.protocol)]);
}

async function handle(r: EasRequest): Promise<PluginResponse> {
  const ops = r.body?.children ?? [];
  // Only Fetch and EmptyFolderContents are served (a conversation Move is not): anything else is a protocol error.
  const served = (op: WbxmlElement) => op.page === 'ItemOperations' && (op.tag === 'Fetch' || op.tag === 'EmptyFolderContents');
  if (!ops.length || !ops.every(served)) return wbxml(io('ItemOperations', [io('Status', STATUS.protocol)]));
  const out: WbxmlElement[] = [];
  for (const op of ops) out.push(await operation(r, op));
  return wbxml(io('ItemOperations', [io('Status', STATUS.ok), io('Response', out)]));
}

export const itemOperations: EasCommand = { root: { page: 'ItemOperations', tag: 'ItemOperations' }, handle };
