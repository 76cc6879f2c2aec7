// What a push event changes in the mail page (no DOM: unit-tested in test/unit/web/live.test.ts).
import type { PushEvent } from '../shared/push-event.js';
import type { Folder, Message } from './types.js';

/** The folders after a folder event: counts merged by uid (an older version is ignored), a folder gone removed. */
export function applyFolderEvent(folders: Folder[], e: PushEvent): Folder[] {
  if (e.type !== 'folder') return folders;
  const uid = String(e.data.uid ?? '');
  if (e.action === 'delete') return folders.filter((f) => f.uid !== uid);
  if (e.action !== 'update') return folders;
  return folders.map((f) => {
    if (f.uid !== uid) return f;
    const version = Number(e.data.version ?? f.version);
    if (version < f.version) return f;
    return {
      ...f,
      unreadCount: Number(e.data.unreadCount ?? f.unreadCount),
      totalCount: Number(e.data.totalCount ?? f.totalCount),
      version,
    };
  });
}

/** Whether the folder list must be read again: a folder made, or an event of a folder the page does not know. */
export const foldersChanged = (folders: Folder[], e: PushEvent): boolean =>
  e.type === 'folder' && (e.action === 'create' || (e.action === 'update' && !folders.some((f) => f.uid === e.data.uid)));

/**
 * What an event does to the open folder's list (`shown`: the number of rows it shows): read again
 * when the folder's count moved (messages came, went or moved away: the rows shift) — a list that
 * counts its own rows (conversations, Focused/Other: `countsItself`) on any change of the folder's
 * counts, since its rows are not the folder's messages one to one — a message to put in place of
 * its row when one of its messages changed, nothing otherwise.
 */
export function listChange(
  openUid: string,
  shown: number,
  e: PushEvent,
  countsItself = false,
): { reload: number } | { row: Message } | null {
  if (!openUid || e.channel !== openUid) return null;
  if (e.type === 'folder' && e.action === 'update' && (countsItself || Number(e.data.totalCount) !== shown))
    return { reload: Number(e.data.totalCount) };
  if (e.type === 'message' && e.action === 'update' && e.data.folderUid === openUid) return { row: e.data as unknown as Message };
  return null;
}
