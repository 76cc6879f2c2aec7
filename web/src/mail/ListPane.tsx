import { useCallback, useRef, useState } from 'react';
import { BulkBar } from './BulkBar.js';
import type { BulkOp } from './bulk.js';
import { MessageList, type ListHandle, type PickHow } from './MessageList.js';
import { SearchResults } from './search/Search.js';
import type { SearchForm } from './search/query.js';
import { NO_PICKS, range, toggle, type Picks } from './selection.js';
import type { Folder, Message } from './types.js';
import { rowsOf } from './rows.js';

type InboxView = 'focused' | 'other' | 'all';
// All first: mail filed without a classification (imported, or from before Focused Inbox) is only there.
const VIEWS: Array<{ view: InboxView; label: string }> = [
  { view: 'all', label: 'All' },
  { view: 'focused', label: 'Focused' },
  { view: 'other', label: 'Other' },
];

interface Props {
  mailboxUid: string;
  folder: Folder | null;
  folders: Folder[];
  search: { form: SearchForm; n: number } | null;
  selected: string;
  onOpen(m: Message): void;
  handle(h: ListHandle): void;
  bulk(rows: Message[], op: BulkOp): Promise<void>;
  /** Conversations rather than messages, where a folder lists them (the appearance setting, switched in the toolbar). */
  conversations: boolean;
  setConversations(on: boolean): void;
}

/** Folders whose messages are each a piece of work of their own (a draft, a message on its way) list messages, never conversations. */
const FLAT_ROLES = new Set(['drafts', 'outbox']);

/** The middle pane: the open folder's messages (the Inbox split into Focused and Other) or the search results; several can be picked and changed at once. */
export function ListPane(props: Props) {
  const { mailboxUid, folder, folders, search, selected, onOpen, handle, bulk, conversations, setConversations } = props;
  const [picks, setPicks] = useState<Picks>(NO_PICKS);
  const [picking, setPicking] = useState(false);
  const [view, setView] = useState<InboxView>('all');
  const list = useRef<ListHandle | null>(null);
  const onHandle = useCallback(
    (h: ListHandle) => {
      list.current = h;
      handle(h);
    },
    [handle],
  );
  const onPick = (m: Message, index: number, how: PickHow) =>
    setPicks((p) => (how === 'toggle' ? toggle(p, m.uid, index) : range(p, index, (i) => list.current?.pager.row(i)?.uid)));
  if (search) return <SearchResults key={search.n} mailboxUid={mailboxUid} form={search.form} selected={selected} onOpen={onOpen} />;
  if (!folder) return null;
  const inbox = folder.role === 'inbox';
  const filter = inbox && view !== 'all' ? `focused=${view}` : '';
  // Focused and Other are lists of messages (a conversation's messages can be on both sides).
  const groups = !filter && !FLAT_ROLES.has(folder.role ?? '');
  const threads = conversations && groups;
  return (
    <div className="list-column">
      <div className="toolbar list-tools">
        {inbox && (
          <div role="tablist" aria-label="Inbox view" className="tabs">
            {VIEWS.map((v) => (
              <button
                key={v.view}
                type="button"
                role="tab"
                aria-selected={view === v.view}
                className="secondary"
                onClick={() => setView(v.view)}
              >
                {v.label}
              </button>
            ))}
          </div>
        )}
        {groups && (
          <button
            type="button"
            className="secondary"
            aria-pressed={conversations}
            onClick={() => {
              setPicks(NO_PICKS); // rows are other rows now
              setConversations(!conversations);
            }}
          >
            Conversations
          </button>
        )}
        <button type="button" className="secondary" aria-pressed={picking} onClick={() => setPicking((p) => !p)}>
          Pick
        </button>
      </div>
      {picks.uids.size > 0 && (
        <BulkBar
          count={picks.uids.size}
          folders={folders}
          folderUid={folder.uid}
          onBulk={(op) => void bulk(rowsOf(list.current, [...picks.uids]), op).then(() => setPicks(NO_PICKS))}
          onClear={() => setPicks(NO_PICKS)}
        />
      )}
      <MessageList
        key={`${folder.uid}?${filter}&${threads}`}
        folder={folder}
        filter={filter}
        threads={threads}
        selected={selected}
        picks={picks}
        picking={picking}
        onOpen={onOpen}
        onPick={onPick}
        handle={onHandle}
      />
    </div>
  );
}
