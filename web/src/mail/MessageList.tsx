import { useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState, type MouseEvent } from 'react';
import { api, countOf, when } from '../shared/api.js';
import { Pager } from './pager.js';
import type { Picks } from './selection.js';
import { isCompact } from '../shared/appearance.js';
import type { Folder, Message } from './types.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { localSubject, noticeUnknown, useLocalIndex } from '../crypto/local-index.js';

/** Height of a row in pixels (the density setting's): the list places rows by index, so it reads only the pages in view. */
const rowHeight = (): number => (isCompact() ? 66 : 78);
const PAGE = 100;
/** Rows rendered above and below the viewport, so a scroll does not show blank rows first. */
const OVERSCAN = 10;
/** The drag-and-drop type of messages dragged from the list (a JSON array of uids). */
export const DRAG_TYPE = 'application/x-svcmail-messages';

export interface ListHandle {
  pager: Pager<Message>;
  /** Scrolls row i into view (its page is then read). */
  reveal(i: number): void;
  /** Reads the list again, now `total` rows long (messages came, went or moved); a filtered list counts itself. */
  reload(total: number): void;
  /** Shows a changed message in its row, if the row is here. */
  replace(m: Message): void;
  /** Its rows are not the folder's messages one to one (conversations, Focused/Other): it counts them itself. */
  countsItself: boolean;
}

export type PickHow = 'toggle' | 'range';

interface Props {
  folder: Folder;
  /** Query parameters narrowing the folder's messages (Focused/Other), or ''. */
  filter: string;
  /** One row per conversation (GET /api/mail/threads): the newest message of each, with its count. */
  threads: boolean;
  selected: string;
  picks: Picks;
  /** A click picks instead of opening (touch screens have no Ctrl or Shift). */
  picking: boolean;
  onOpen(m: Message): void;
  onPick(m: Message, index: number, how: PickHow): void;
  handle?: (h: ListHandle) => void;
}

const listPath = (folder: Folder, filter: string, threads: boolean) =>
  threads
    ? `/api/mail/threads?folderUid=${encodeURIComponent(folder.uid)}`
    : `/api/mail/messages?folderUid=${encodeURIComponent(folder.uid)}${filter ? `&${filter}` : ''}`;

interface Conversation {
  count: number;
  unreadCount: number;
  message: Message;
}

/** One page of rows: messages newest first, or conversations as their newest message carrying the conversation's counts. */
const readPage = (path: string, threads: boolean, page: number, size: number): Promise<Message[]> =>
  threads
    ? api<Conversation[]>(`${path}&limit=${size}&page=${page}`).then((cs) =>
        cs.map((c) => ({ ...c.message, thread: { count: c.count, unread: c.unreadCount } })),
      )
    : api<Message[]>(`${path}&limit=${size}&page=${page}&sort=-date`);

/** A row changed by an action keeps its conversation's counts, its unread count following its own read state. */
const kept = (row: Message, m: Message): Message =>
  row.thread ? { ...m, thread: { ...row.thread, unread: row.thread.unread + (row.seen === m.seen ? 0 : m.seen ? -1 : 1) } } : m;

/**
 * The messages of a folder, newest first, as a virtual list: only the rows in view are in the
 * document, read page by page from the API as they scroll in (a 100 000-message folder is as quick
 * as a small one). Rows can be picked (Ctrl/⌘-click, Shift-click) and dragged onto a folder.
 */
export function MessageList({ folder, filter, threads, selected, picks, picking, onOpen, onPick, handle }: Props) {
  const [, redraw] = useReducer((x: number) => x + 1, 0);
  // Counts the list's resets: the rows in view are read again even when their number did not change.
  const [epoch, nextEpoch] = useReducer((x: number) => x + 1, 0);
  const [error, setError] = useState<unknown>(null);
  const path = listPath(folder, filter, threads);
  // A filtered list and a list of conversations count their own rows; the folder's count is its messages'.
  const countsItself = Boolean(filter) || threads;
  const pager = useMemo(
    // A list that counts itself starts at the folder's count (it has no more rows than that), so its
    // first page is read while it counts: one round trip to the first rows, not two.
    () => new Pager<Message>(PAGE, (page, size) => readPage(path, threads, page, size), folder.totalCount),
    // A new folder or filter is a new list; the folder's counts move within one (reset by the caller).
    [path],
  );
  const box = useRef<HTMLDivElement>(null);
  const ROW_HEIGHT = rowHeight();
  useEffect(() => {
    const reset = (total: number) => {
      pager.reset(total);
      nextEpoch();
    };
    const reload = (total: number) => (countsItself ? countOf(path).then(reset, setError) : reset(total));
    if (countsItself)
      countOf(path).then((n) => {
        pager.resize(n);
        redraw();
      }, setError);
    const reveal = (i: number) => {
      const el = box.current;
      if (!el) return;
      const top = i * ROW_HEIGHT;
      if (top < el.scrollTop) el.scrollTop = top;
      else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
      setView({ top: el.scrollTop, height: el.clientHeight });
    };
    const replace = (m: Message) =>
      void (
        pager.update(
          (r) => r.uid === m.uid,
          (r) => kept(r, m),
        ) && redraw()
      );
    handle?.({ pager, reveal, reload: (total) => void reload(total), replace, countsItself });
  }, [pager, handle, countsItself, path, ROW_HEIGHT]);
  const [view, setView] = useState({ top: 0, height: 800 });
  useLayoutEffect(() => {
    const el = box.current!;
    const observer = new ResizeObserver(() => setView({ top: el.scrollTop, height: el.clientHeight }));
    observer.observe(el);
    return () => observer.disconnect();
  }, []);
  const first = Math.max(0, Math.floor(view.top / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(pager.total, Math.ceil((view.top + view.height) / ROW_HEIGHT) + OVERSCAN);
  useEffect(() => {
    pager.ensure(first, last).then(redraw, setError);
  }, [pager, first, last, epoch]);

  const click = (m: Message, index: number, e: MouseEvent) => {
    if (e.shiftKey) onPick(m, index, 'range');
    else if (e.ctrlKey || e.metaKey || picking) onPick(m, index, 'toggle');
    else onOpen(m);
  };
  const rows = [];
  for (let i = first; i < last; i++) {
    const m = pager.row(i);
    const isSelected = m ? (picks.uids.size ? picks.uids.has(m.uid) : m.uid === selected) : false;
    rows.push(
      <Row
        key={i}
        index={i}
        height={ROW_HEIGHT}
        message={m}
        selected={isSelected}
        focus={m?.uid === selected}
        total={pager.total}
        picks={picks}
        onClick={click}
        onOpen={onOpen}
        onPickKey={picking ? (pm, pi, r) => onPick(pm, pi, r ? 'range' : 'toggle') : undefined}
      />,
    );
  }
  return (
    <div
      ref={box}
      className="virtual"
      role="listbox"
      aria-label="Messages"
      aria-multiselectable="true"
      onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
    >
      <ErrorBox error={error} />
      {pager.total ? (
        <div className="virtual-space" style={{ height: pager.total * ROW_HEIGHT }}>
          {rows}
        </div>
      ) : (
        <p className="muted empty">No messages.</p>
      )}
    </div>
  );
}

function Row({
  index,
  height,
  message: m,
  selected,
  focus,
  total,
  picks,
  onClick,
  onOpen,
  onPickKey,
}: {
  index: number;
  height: number;
  message: Message | undefined;
  selected: boolean;
  focus: boolean;
  total: number;
  picks: Picks;
  onClick(m: Message, index: number, e: MouseEvent): void;
  onOpen(m: Message): void;
  /** Pick mode: Space picks the row (with Shift, the rows up to it). */
  onPickKey?: (m: Message, index: number, range: boolean) => void;
}) {
  const place = { transform: `translateY(${index * height}px)`, height };
  if (!m)
    return (
      <div role="option" aria-selected={false} aria-setsize={total} aria-posinset={index + 1} className="row loading" style={place}>
        <span className="muted">Loading…</span>
      </div>
    );
  return (
    <div
      role="option"
      data-message={m.uid}
      aria-selected={selected}
      aria-setsize={total}
      aria-posinset={index + 1}
      tabIndex={focus ? 0 : -1}
      className={(m.thread ? m.thread.unread > 0 : !m.seen) ? 'row unread' : 'row'}
      style={place}
      draggable
      onDragStart={(e) => {
        // Dragging a picked row takes all the picked ones along.
        const uids = picks.uids.has(m.uid) ? [...picks.uids] : [m.uid];
        e.dataTransfer.setData(DRAG_TYPE, JSON.stringify(uids));
        e.dataTransfer.effectAllowed = 'move';
      }}
      onClick={(e) => onClick(m, index, e)}
      onKeyDown={(e) => {
        if (e.key !== 'Enter' && e.key !== ' ') return;
        e.preventDefault();
        // Space picks (Shift+Space: a range) in Pick mode, as a click would; Enter opens.
        if (e.key === ' ' && onPickKey) onPickKey(m, index, e.shiftKey);
        else onOpen(m);
      }}
    >
      <RowContent m={m} />
    </div>
  );
}

/**
 * What a row shows of a message: sender (and a flag), subject, date. An encrypted message is marked
 * so, with its real subject once the local index knows it (the stored one is RFC 9788's "[...]").
 */
export function RowContent({ m }: { m: Message }) {
  const indexVersion = useLocalIndex();
  const encrypted = (m as Message & { smime?: string | null }).smime === 'encrypted';
  const decrypted = encrypted ? localSubject(m.mailboxUid, m.uid) : null;
  // New encrypted mail: the index catches up soon (asked again as the index changes, until it knows the message).
  useEffect(() => {
    if (encrypted && decrypted === null) noticeUnknown(m.mailboxUid, m.uid);
  }, [encrypted, decrypted, m.mailboxUid, m.uid, indexVersion]);
  return (
    <>
      <div className="row-from">
        {m.flagged && (
          <span className="flag" role="img" aria-label="Flagged">
            ⚑{' '}
          </span>
        )}
        {m.from?.name || m.fromAddress || '(no sender)'}
        {m.thread && m.thread.count > 1 && (
          <span className="thread-count">
            {' '}
            {m.thread.count}
            <span className="visually-hidden"> messages{m.thread.unread ? `, ${m.thread.unread} unread` : ''}</span>
          </span>
        )}
      </div>
      <div className="row-subject">
        {encrypted && (
          <span role="img" aria-label="Encrypted">
            🔒{' '}
          </span>
        )}
        {decrypted === null ? m.subject || '(no subject)' : decrypted || '(no subject)'}
      </div>
      <div className="muted row-date">{when(m.date)}</div>
    </>
  );
}
