import { useCallback, useEffect, useRef, useState } from 'react';
import { api, describeError } from '../shared/api.js';
import { FolderTree } from './FolderTree.js';
import { MessageList, type ListHandle } from './MessageList.js';
import { Reader } from './Reader.js';
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
  const [folder, setFolder] = useState<Folder | null>(null);
  const [open, setOpen] = useState<Message | null>(null);
  const [error, setError] = useState<unknown>(null);
  const list = useRef<ListHandle | null>(null);
  useEffect(() => {
    api<Folder[]>(`/api/mail/folders?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000`).then((all) => {
      setFolders(all);
      setFolder(all.find((f) => f.role === 'inbox') ?? all[0] ?? null);
    }, setError);
  }, [mailboxUid]);
  const onList = useCallback((h: ListHandle) => (list.current = h), []);

  const openMessage = async (m: Message) => {
    setOpen(m);
    if (m.seen) return;
    try {
      const updated = await api<Message>(`/api/mail/messages/${encodeURIComponent(m.uid)}/seen`, {
        method: 'PUT',
        body: { value: true, version: m.version },
      });
      list.current?.pager.update(
        (r) => r.uid === m.uid,
        () => updated,
      );
      list.current?.refresh();
      setOpen(updated);
      setFolders((all) => all.map((f) => (f.uid === m.folderUid ? { ...f, unreadCount: Math.max(0, f.unreadCount - 1) } : f)));
    } catch (e) {
      setError(e);
    }
  };

  return (
    <>
      {error !== null && (
        <div className="error" role="alert">
          {describeError(error)}
        </div>
      )}
      <div className="columns">
        <nav className="pane" aria-label="Folders">
          <FolderTree
            folders={folders}
            selected={folder?.uid ?? ''}
            onSelect={(f) => {
              setFolder(f);
              setOpen(null);
            }}
          />
        </nav>
        <section className="pane list-pane" aria-label="Message list">
          {folder && (
            <MessageList key={folder.uid} folder={folder} selected={open?.uid ?? ''} onOpen={(m) => void openMessage(m)} handle={onList} />
          )}
        </section>
        <section className="pane reader" aria-label="Reading pane">
          <Reader message={open} />
        </section>
      </div>
    </>
  );
}
