// A mailbox's folders kept live: read once, then counts and the open list follow /push events
// (SUBSCRIBE to the mailbox and each folder); after a reconnect everything is read again, since
// events are not replayed.
import { useCallback, useEffect, useRef, useState, type RefObject } from 'react';
import { api } from '../shared/api.js';
import { PushClient, type PushEvent } from '../shared/push.js';
import { beforeSignOut } from '../shared/session.js';
import { applyFolderEvent, foldersChanged, listChange } from './live.js';
import type { ListHandle } from './MessageList.js';
import type { Folder } from './types.js';

export function useLiveFolders(mailboxUid: string, list: RefObject<ListHandle | null>, setError: (e: unknown) => void) {
  const [folders, setFolders] = useState<Folder[]>([]);
  const [openUid, setOpenUid] = useState('');
  const push = useRef<PushClient | null>(null);
  const openUidRef = useRef(openUid);
  openUidRef.current = openUid;

  const loadFolders = useCallback(async () => {
    const all = await api<Folder[]>(`/api/mail/folders?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000`);
    setFolders(all);
    setOpenUid((uid) => (all.some((f) => f.uid === uid) ? uid : ((all.find((f) => f.role === 'inbox') ?? all[0])?.uid ?? '')));
    push.current?.subscribe([mailboxUid, ...all.map((f) => f.uid)]);
    return all;
  }, [mailboxUid]);

  const onEvent = useRef<(e: PushEvent) => void>(() => undefined);
  onEvent.current = (e) => {
    const change = list.current && listChange(openUid, list.current.pager.total, e, list.current.countsItself);
    if (change && 'reload' in change) list.current!.reload(change.reload);
    if (change && 'row' in change) list.current!.replace(change.row);
    if (foldersChanged(folders, e)) void loadFolders().catch(setError);
    else setFolders((all) => applyFolderEvent(all, e));
  };
  useEffect(() => {
    const client = new PushClient({
      event: (e) => onEvent.current(e),
      reconnected: () => {
        void loadFolders().then((all) => {
          const shown = all.find((f) => f.uid === openUidRef.current);
          if (shown) list.current?.reload(shown.totalCount);
        }, setError);
      },
    });
    push.current = client;
    beforeSignOut(() => client.close());
    loadFolders().catch(setError);
    return () => client.close();
  }, [loadFolders, list, setError]);

  return { folders, setFolders, openUid, setOpenUid, openUidRef, reload: loadFolders };
}
