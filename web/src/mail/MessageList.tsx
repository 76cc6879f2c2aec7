import { useEffect, useLayoutEffect, useMemo, useReducer, useRef, useState } from 'react';
import { api, describeError, when } from '../shared/api.js';
import { Pager } from './pager.js';
import type { Folder, Message } from './types.js';

/** Height of a row in pixels: the list places rows by index, so it reads only the pages in view. */
export const ROW_HEIGHT = 64;
const PAGE = 100;
/** Rows rendered above and below the viewport, so a scroll does not show blank rows first. */
const OVERSCAN = 10;

export interface ListHandle {
  pager: Pager<Message>;
  /** Scrolls row i into view (its page is then read). */
  reveal(i: number): void;
  /** Reads the list again, now `total` rows long (messages came, went or moved). */
  reload(total: number): void;
  /** Shows a changed message in its row, if the row is here. */
  replace(m: Message): void;
}

/**
 * The messages of a folder, newest first, as a virtual list: only the rows in view are in the
 * document, read page by page from the API as they scroll in (a 100 000-message folder is as quick
 * as a small one).
 */
export function MessageList({
  folder,
  selected,
  onOpen,
  handle,
}: {
  folder: Folder;
  selected: string;
  onOpen: (m: Message) => void;
  handle?: (h: ListHandle) => void;
}) {
  const [, redraw] = useReducer((x: number) => x + 1, 0);
  const [error, setError] = useState<unknown>(null);
  const pager = useMemo(
    () =>
      new Pager<Message>(
        PAGE,
        (page, size) =>
          api<Message[]>(`/api/mail/messages?folderUid=${encodeURIComponent(folder.uid)}&limit=${size}&page=${page}&sort=-date`),
        folder.totalCount,
      ),
    // A new folder is a new list; the folder's counts move within one (reset by the caller).
    [folder.uid],
  );
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const reveal = (i: number) => {
      const el = box.current;
      if (!el) return;
      const top = i * ROW_HEIGHT;
      if (top < el.scrollTop) el.scrollTop = top;
      else if (top + ROW_HEIGHT > el.scrollTop + el.clientHeight) el.scrollTop = top + ROW_HEIGHT - el.clientHeight;
      setView({ top: el.scrollTop, height: el.clientHeight });
    };
    const reload = (total: number) => {
      pager.reset(total);
      redraw();
    };
    const replace = (m: Message) => {
      if (
        pager.update(
          (r) => r.uid === m.uid,
          () => m,
        )
      )
        redraw();
    };
    handle?.({ pager, reveal, reload, replace });
  }, [pager, handle]);
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
  }, [pager, first, last]);

  const rows = [];
  for (let i = first; i < last; i++)
    rows.push(<Row key={i} index={i} message={pager.row(i)} selected={selected} total={pager.total} onOpen={onOpen} />);
  return (
    <div
      ref={box}
      className="virtual"
      role="listbox"
      aria-label="Messages"
      onScroll={(e) => setView({ top: e.currentTarget.scrollTop, height: e.currentTarget.clientHeight })}
    >
      {error !== null && (
        <div className="error" role="alert">
          {describeError(error)}
        </div>
      )}
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
  message: m,
  selected,
  total,
  onOpen,
}: {
  index: number;
  message: Message | undefined;
  selected: string;
  total: number;
  onOpen: (m: Message) => void;
}) {
  const place = { transform: `translateY(${index * ROW_HEIGHT}px)`, height: ROW_HEIGHT };
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
      aria-selected={m.uid === selected}
      aria-setsize={total}
      aria-posinset={index + 1}
      tabIndex={m.uid === selected ? 0 : -1}
      className={m.seen ? 'row' : 'row unread'}
      style={place}
      onClick={() => onOpen(m)}
      onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), onOpen(m))}
    >
      <RowContent m={m} />
    </div>
  );
}

/** What a row shows of a message: sender (and a flag), subject, date. */
export function RowContent({ m }: { m: Message }) {
  return (
    <>
      <div className="row-from">
        {m.flagged && (
          <span className="flag" role="img" aria-label="Flagged">
            ⚑{' '}
          </span>
        )}
        {m.from?.name || m.fromAddress || '(no sender)'}
      </div>
      <div className="row-subject">{m.subject || '(no subject)'}</div>
      <div className="muted row-date">{when(m.date)}</div>
    </>
  );
}
