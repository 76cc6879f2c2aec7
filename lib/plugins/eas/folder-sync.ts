import type { CallerApi, PluginResponse } from '../api.js';
import type { EasCommand, EasRequest } from './command.js';
import { textOf, wbxml } from './protocol.js';
import { pimFolders } from './sources.js';
import { ns, type WbxmlElement } from './wbxml/index.js';

// FolderSync (MS-ASCMD 2.2.1.5): the folder hierarchy. Mail folder ServerIds are the folders'
// uids; the mailbox's Contacts, Calendar and task lists follow at the top level with ids of their
// own (sources.ts), so no id changes while its folder lives; the device state keeps the list the device was given
// with its key, and a later FolderSync answers what changed since. SyncKey 0 resends the whole list
// and resets only that list: the collections keep their sync state, because folder ids are stable
// (Android Gmail sends SyncKey 0 on every refresh and would otherwise start every folder over).

const fh = ns('FolderHierarchy');

/** FolderSync Status values. */
const STATUS = { ok: 1, serverError: 6, invalidKey: 9, badRequest: 10 } as const;

/** MS-ASCMD 2.2.3.186.3 folder types. */
export const FOLDER_TYPES: Record<string, number> = {
  inbox: 2,
  drafts: 3,
  trash: 4,
  sent: 5,
  outbox: 6,
  junk: 12,
  archive: 12,
};
const USER_MAIL = 12;

export interface DeviceFolder {
  parentId: string;
  name: string;
  type: number;
}

/** The mailbox's folders as the device sees them: id → parent, name, type. */
export async function currentFolders(caller: CallerApi, mailboxUid: string): Promise<Record<string, DeviceFolder>> {
  const [rows, pim] = await Promise.all([caller.folders(mailboxUid), pimFolders(caller, mailboxUid)]);
  const ids = new Set(rows.map((f) => String(f.uid)));
  const out: Record<string, DeviceFolder> = {};
  for (const f of rows) {
    const parent = typeof f.parentUid === 'string' && ids.has(f.parentUid) ? f.parentUid : '0';
    out[String(f.uid)] = { parentId: parent, name: String(f.name), type: FOLDER_TYPES[String(f.role)] ?? USER_MAIL };
  }
  for (const f of pim) out[f.id] = { parentId: '0', name: f.name, type: f.type };
  return out;
}

const entry = (id: string, f: DeviceFolder): WbxmlElement[] => [
  fh('ServerId', id),
  fh('ParentId', f.parentId),
  fh('DisplayName', f.name),
  fh('Type', f.type),
];

async function handle(r: EasRequest): Promise<PluginResponse> {
  const { caller, device } = r;
  const answer = (children: WbxmlElement[]) => wbxml(fh('FolderSync', children));
  const key = textOf(r.body ?? undefined, 'SyncKey');
  if (key === undefined || !/^\d{1,10}$/.test(key)) return answer([fh('Status', STATUS.badRequest)]);
  const asked = Number(key);
  if (asked !== 0 && asked !== device.folderSyncKey) return answer([fh('Status', STATUS.invalidKey)]);

  const now = await currentFolders(caller, r.mailboxUid);
  const held: Record<string, DeviceFolder> = asked === 0 ? {} : device.folders;
  // Parents before their children: a device files a folder under a parent it already has.
  const depth = (id: string): number => (now[id] && now[id].parentId !== '0' ? 1 + depth(now[id].parentId) : 0);
  const adds = Object.keys(now)
    .filter((id) => !held[id])
    .sort((a, b) => depth(a) - depth(b));
  const deletes = Object.keys(held).filter((id) => !now[id]);
  const updates = Object.keys(now).filter(
    (id) => held[id] && (held[id].name !== now[id].name || held[id].parentId !== now[id].parentId || held[id].type !== now[id].type),
  );
  const changed = adds.length + deletes.length + updates.length > 0;
  // A new key when anything changed (and always for SyncKey 0); the same key when nothing did.
  const next = asked === 0 || changed ? device.folderSyncKey + 1 : device.folderSyncKey;
  if (next !== device.folderSyncKey || asked === 0) await caller.devices.update(device.uid, { folderSyncKey: next, folders: now });
  return answer([
    fh('Status', STATUS.ok),
    fh('SyncKey', next),
    fh('Changes', [
      fh('Count', adds.length + deletes.length + updates.length),
      ...updates.map((id) => fh('Update', entry(id, now[id]))),
      ...deletes.map((id) => fh('Delete', [fh('ServerId', id)])),
      ...adds.map((id) => fh('Add', entry(id, now[id]))),
    ]),
  ]);
}

export const folderSync: EasCommand = { root: { page: 'FolderHierarchy', tag: 'FolderSync' }, handle };
