import { useCallback, useEffect, useRef, useState } from 'react';
import { api } from '../shared/api.js';
import { FolderTree } from './FolderTree.js';
import { FolderActions } from './FolderActions.js';
import { rowsOf } from './rows.js';
import { useLiveFolders } from './live-folders.js';
import { applyAppearance, DEFAULT_APPEARANCE, readAppearance } from '../shared/appearance.js';
import { SearchBar } from './search/Search.js';
import { ListPane } from './ListPane.js';
import type { SearchForm } from './search/query.js';
import type { ListHandle } from './MessageList.js';
import { messageActions } from './actions.js';
import { Reader } from './Reader.js';
import { ShortcutHelp } from './ShortcutHelp.js';
import { Compose } from './compose/Compose.js';
import { useSending, type StatusLine } from './compose/sending.js';
import { useComposeState } from './compose/use-compose.js';
import { useMailShortcuts } from './mail-shortcuts.js';
import type { Mailbox, Message } from './types.js';
import { Pim, useView, ViewLinks } from './views.js';
import { ErrorBox } from '../shared/ErrorBox.js';

/** Web mail: the caller's mailboxes, a mailbox's folders, a folder's messages and the reading pane. */
export function App() {
  const [boxes, setBoxes] = useState<Mailbox[] | null>(null);
  const [box, setBox] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [look, setLook] = useState(DEFAULT_APPEARANCE);
  const view = useView();
  useEffect(() => {
    api<Mailbox[]>('/api/mail/mailboxes?limit=100').then((b) => {
      setBoxes(b);
      setBox(b[0]?.uid ?? '');
    }, setError);
  }, []);
  useEffect(() => {
    if (box)
      void readAppearance(box).then(
        (a) => {
          applyAppearance(a);
          setLook(a);
        },
        () => undefined,
      );
  }, [box]);
  if (error !== null) return <ErrorBox error={error} />;
  if (!boxes) return <p className="muted">Loading…</p>;
  if (!boxes.length) return <p className="notice">You have no mailbox yet. An administrator creates one for you.</p>;
  const current = boxes.find((b) => b.uid === box)!;
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
      <ViewLinks view={view} />
      {view !== 'mail' && <Pim key={box} view={view} box={current} />}
      {/* Mail stays mounted while another view shows: its folder, list and draft are where they were. */}
      <div hidden={view !== 'mail'}>
        <MailboxView key={box} box={current} active={view === 'mail'} conversations={look.conversationView} />
      </div>
    </>
  );
}

/** The status line: what became of the last action, with Undo while a send waits. */
function Status({ line }: { line: StatusLine | null }) {
  return (
    <div role="status" className="status-line">
      {line?.text}{' '}
      {line?.undo && (
        <button type="button" className="secondary" onClick={line.undo}>
          Undo
        </button>
      )}
    </div>
  );
}

function MailboxView({ box, active, conversations: byDefault }: { box: Mailbox; active: boolean; conversations: boolean }) {
  const [open, setOpen] = useState<Message | null>(null);
  const [conversations, setConversations] = useState(byDefault);
  useEffect(() => setConversations(byDefault), [byDefault]);
  const [error, setError] = useState<unknown>(null);
  const list = useRef<ListHandle | null>(null);
  const { folders, setFolders, openUid, setOpenUid, openUidRef, reload } = useLiveFolders(box.uid, list, setError);
  const folder = folders.find((f) => f.uid === openUid) ?? null;
  const onList = useCallback((h: ListHandle) => (list.current = h), []);

  const [search, setSearch] = useState<{ form: SearchForm; n: number } | null>(null);
  const { compose, reopen, startCompose, close: closeCompose } = useComposeState();

  const sending = useSending(reopen);
  const { actions, bulk } = messageActions({ list, openUid: openUidRef, setOpen, setFolders, setError, tell: sending.tell });
  const openMessage = (m: Message) => {
    if (m.draft && folders.find((f) => f.uid === m.folderUid)?.role === 'drafts') return startCompose({ kind: 'draft', draft: m });
    closeCompose();
    setOpen(m);
    if (!m.seen) void actions.setFlag(m, 'seen', true);
  };
  const [help, setHelp] = useState(false);
  const toggleHelp = useCallback(() => setHelp((h) => !h), []);
  const closeHelp = useCallback(() => setHelp(false), []);
  const shortcuts = useMailShortcuts({ list, open, folders, openMessage, actions, toggleHelp, compose: startCompose, active });

  return (
    <>
      <ErrorBox error={error} />
      {help && <ShortcutHelp shortcuts={shortcuts} onClose={closeHelp} />}
      <div className="mail-bar">
        <button type="button" onClick={() => startCompose({ kind: 'new' })}>
          New message
        </button>
        <SearchBar
          folders={folders}
          onSearch={(form) => setSearch((s) => ({ form, n: (s?.n ?? 0) + 1 }))}
          onClear={() => setSearch(null)}
        />
        <Status line={sending.status} />
      </div>
      <div className="columns">
        <nav className="pane" aria-label="Folders">
          <FolderTree
            folders={folders}
            selected={openUid}
            onSelect={(f) => {
              setSearch(null);
              setOpenUid(f.uid);
              setOpen(null);
            }}
            onDrop={(f, uids) => void bulk(rowsOf(list.current, uids), { kind: 'move', folderUid: f.uid })}
          />
          <FolderActions
            mailboxUid={box.uid}
            folder={folder}
            setError={setError}
            changed={async (to) => {
              const all = await reload();
              if (to !== undefined) setOpenUid(to);
              const shown = all.find((f) => f.uid === openUidRef.current);
              if (shown) list.current?.reload(shown.totalCount);
            }}
          />
        </nav>
        <section className="pane list-pane" aria-label="Message list">
          <ListPane
            key={folder?.uid ?? ''}
            mailboxUid={box.uid}
            folder={folder}
            folders={folders}
            search={search}
            selected={open?.uid ?? ''}
            onOpen={openMessage}
            handle={onList}
            bulk={bulk}
            conversations={conversations}
            setConversations={setConversations}
          />
        </section>
        <section className="pane reader" aria-label="Reading pane">
          {compose ? (
            <Compose
              key={compose.n}
              box={box}
              folders={folders}
              start={compose.start}
              failure={compose.failure}
              onClose={() => closeCompose(compose.n)}
              onSend={(draft, mode) => {
                closeCompose(compose.n);
                sending.send(draft, mode);
              }}
            />
          ) : (
            <Reader message={open} address={box.address} folders={folders} actions={actions} compose={startCompose} onOpen={openMessage} />
          )}
        </section>
      </div>
    </>
  );
}
