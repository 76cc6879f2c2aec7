// What push events do to the mail page's state (web/src/mail/live.ts): folder counts merged by
// version, the open list read again when its count moves, a changed message put in its row.
import { describe, expect, it } from 'vitest';
import { applyFolderEvent, foldersChanged, listChange } from '../../../web/src/mail/live.js';
import type { Folder } from '../../../web/src/mail/types.js';

const folder = (uid: string, over: Partial<Folder> = {}): Folder => ({
  uid,
  name: uid,
  role: null,
  parentUid: null,
  unreadCount: 1,
  totalCount: 5,
  version: 3,
  ...over,
});
const update = (uid: string, data: Record<string, unknown>) => ({ channel: uid, type: 'folder', action: 'update', data: { uid, ...data } });

describe('push events in the mail page', () => {
  it('merges folder counts by uid, ignores an older version, and removes a deleted folder', () => {
    const folders = [folder('inbox'), folder('sent')];
    const after = applyFolderEvent(folders, update('inbox', { unreadCount: 2, totalCount: 6, version: 4 }));
    expect(after[0]).toMatchObject({ unreadCount: 2, totalCount: 6, version: 4 });
    expect(after[1]).toBe(folders[1]);
    expect(applyFolderEvent(after, update('inbox', { unreadCount: 9, totalCount: 9, version: 3 }))[0]).toMatchObject({ unreadCount: 2 });
    expect(applyFolderEvent(after, { channel: 'box', type: 'folder', action: 'delete', data: { uid: 'sent' } }).map((f) => f.uid)).toEqual([
      'inbox',
    ]);
    expect(applyFolderEvent(after, { channel: 'inbox', type: 'message', action: 'update', data: { uid: 'm1' } })).toBe(after);
  });

  it('reads the folder list again for a new folder or one it does not know', () => {
    const folders = [folder('inbox')];
    expect(foldersChanged(folders, { channel: 'box', type: 'folder', action: 'create', data: { uid: 'new' } })).toBe(true);
    expect(foldersChanged(folders, update('other', { totalCount: 1 }))).toBe(true);
    expect(foldersChanged(folders, update('inbox', { totalCount: 1 }))).toBe(false);
  });

  it('reloads the open list when its count moved, replaces a changed row, and leaves other folders alone', () => {
    expect(listChange('inbox', 5, update('inbox', { totalCount: 6 }))).toEqual({ reload: 6 });
    expect(listChange('inbox', 6, update('inbox', { totalCount: 6, unreadCount: 0 }))).toBeNull();
    expect(listChange('inbox', 5, update('sent', { totalCount: 9 }))).toBeNull();
    // Conversations (or Focused/Other) are not the folder's messages one to one: any change of its counts reads them again.
    expect(listChange('inbox', 6, update('inbox', { totalCount: 6, unreadCount: 0 }), true)).toEqual({ reload: 6 });
    expect(listChange('inbox', 6, update('sent', { totalCount: 6 }), true)).toBeNull();
    const row = { uid: 'm1', folderUid: 'inbox', seen: true };
    expect(listChange('inbox', 5, { channel: 'inbox', type: 'message', action: 'update', data: row })).toEqual({ row });
    // A message moved away is no row of this list: the folder's count event reloads it.
    expect(
      listChange('inbox', 5, { channel: 'inbox', type: 'message', action: 'update', data: { ...row, folderUid: 'archive' } }),
    ).toBeNull();
  });
});
