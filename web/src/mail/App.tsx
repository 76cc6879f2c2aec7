import { useCallback, useEffect, useRef, useState } from 'react';
import { api, describeError } from '../shared/api.js';
import { FolderTree } from './FolderTree.js';
import { PushClient, type PushEvent } from '../shared/push.js';
import { applyFolderEvent, foldersChanged, listChange } from './live.js';
import { MessageList, type ListHandle } from './MessageList.js';
import { messageActions } from './actions.js';
import { Reader } from './Reader.js';
import { ShortcutHelp } from './ShortcutHelp.js';
import { useMailShortcuts } from './mail-shortcuts.js';
import type { Folder, Mailbox, Message } from './types.js';

/** Web mail: the caller's mailboxes, a mailbox's folders, a folder's messages and the reading pane. */
export function App() {
  const [boxes, setBoxes] = useState<Mailbox[] | null>(null);
  const [box, setBox] = useState('');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<Mailbox[]>('/api/mail/mailboxes?limit=100').then((b) => {
      setBoxes(b);
      setBox(b[0]?.uid ?? '');
    }, setError);
  }, []);
  if (error !== null)
    return (
      <div className="error" role="alert">
        {describeError(error)}
      </div>
    );
  if (!boxes) return <p className="muted">Loading…</p>;
  if (!boxes.length) return <p className="notice">You have no mailbox yet. An administrator creates one for you.</p>;
  return (
    <>
      {boxes.length > 1 && (
        <p>
          <select aria-label="Mailbox" value={box} onChange={(e) => setBox(e.target.value)}>
            {boxes.map((b) => (
              <option key={b.uid} value={b.uid}>
                {b.address}
              </option>
            ))}
          </select>
        </p>
      )}
      <MailboxView key={box} mailboxUid={box} />
    </>
  );
}

function MailboxView({ mailboxUid }: { mailboxUid: string }) {
  const [folders, setFolders] = useState<Folder[]>([]);
  const [openUid, setOpenUid] = useState('');
  const [open, setOpen] = useState<Message | null>(null);
  const [error, setError] = useState<unknown>(null);
  const list = useRef<ListHandle | null>(null);
  const push = useRef<PushClient | null>(null);
  const folder = folders.find((f) => f.uid === openUid) ?? null;

  const loadFolders = useCallback(async () => {
    const all = await api<Folder[]>(`/api/mail/folders?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000`);
    setFolders(all);
    setOpenUid((uid) => (all.some((f) => f.uid === uid) ? uid : ((all.find((f) => f.role === 'inbox') ?? all[0])?.uid ?? '')));
    push.current?.subscribe([mailboxUid, ...all.map((f) => f.uid)]);
    return all;
  }, [mailboxUid]);

  // Live counts and rows over /push; what happened while the socket was down is read again.
  const onEvent = useRef<(e: PushEvent) => void>(() => undefined);
  onEvent.current = (e) => {
    const change = list.current && listChange(openUid, list.current.pager.total, e);
    if (change && 'reload' in change) list.current!.reload(change.reload);
    if (change && 'row' in change) list.current!.replace(change.row);
    if (foldersChanged(folders, e)) void loadFolders().catch(setError);
    else setFolders((all) => applyFolderEvent(all, e));
  };
  const openUidRef = useRef(openUid);
  openUidRef.current = openUid;
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
    loadFolders().catch(setError);
    return () => client.close();
  }, [loadFolders]);
  const onList = useCallback((h: ListHandle) => (list.current = h), []);

  const { actions } = messageActions({ list, openUid: openUidRef, setOpen, setFolders, setError });
  const openMessage = (m: Message) => {
    setOpen(m);
    if (!m.seen) void actions.setFlag(m, 'seen', true);
  };
  const [help, setHelp] = useState(false);
  const toggleHelp = useCallback(() => setHelp((h) => !h), []);
  const closeHelp = useCallback(() => setHelp(false), []);
  const shortcuts = useMailShortcuts({ list, open, folders, openMessage, actions, toggleHelp });

  return (
    <>
      {error !== null && (
        <div className="error" role="alert">
          {describeError(error)}
        </div>
      )}
      {help && <ShortcutHelp shortcuts={shortcuts} onClose={closeHelp} />}
      <div className="columns">
        <nav className="pane" aria-label="Folders">
          <FolderTree
            folders={folders}
            selected={openUid}
            onSelect={(f) => {
              setOpenUid(f.uid);
              setOpen(null);
            }}
          />
        </nav>
        <section className="pane list-pane" aria-label="Message list">
          {folder && <MessageList key={folder.uid} folder={folder} selected={open?.uid ?? ''} onOpen={openMessage} handle={onList} />}
        </section>
        <section className="pane reader" aria-label="Reading pane">
          <Reader message={open} actions={actions} />
        </section>
      </div>
    </>
  );
}
