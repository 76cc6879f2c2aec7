import { useEffect, useMemo, useState } from 'react';
import { api } from '../../shared/api.js';
import { startLocalIndex, useIndexStatuses, type IndexStatus } from '../../crypto/local-index.js';
import { RowContent } from '../MessageList.js';
import type { Folder, Message } from '../types.js';
import { EMPTY_SEARCH, asksSomething, searchQuery, type SearchForm } from './query.js';
import { localNote, merged, UnlockToSearch, useLocalResults } from './local.js';
import { ErrorBox } from '../../shared/ErrorBox.js';

const PAGE = 50;
export const SEARCH_INPUT_ID = 'mail-search';

function statusText(s: IndexStatus, named: boolean): string {
  const of = named ? ` of ${s.address}` : '';
  if (s.phase === 'loading') return `Reading the search index of encrypted mail${of}…`;
  if (s.phase === 'catching-up')
    return s.todo ? `Indexing encrypted mail${of}: ${s.done} of ${s.todo}…` : `Looking for new encrypted mail${of}…`;
  if (s.phase === 'failed' || s.problem) return s.problem ?? '';
  return '';
}

/** What the local index of encrypted mail is doing (reading, catching up, a failure); empty when it has nothing to say. */
function IndexStatusLine() {
  const statuses = useIndexStatuses();
  const lines = statuses.map(([, s]) => statusText(s, statuses.length > 1)).filter(Boolean);
  return (
    <span role="status" className="muted index-status">
      {lines.join(' ')}
    </span>
  );
}

/** The search box with its filters (from, to, subject, attachments, dates, folder), and the state of the encrypted mail's index. */
export function SearchBar({ folders, onSearch, onClear }: { folders: Folder[]; onSearch(f: SearchForm): void; onClear(): void }) {
  const [form, setForm] = useState<SearchForm>(EMPTY_SEARCH);
  // The page searches encrypted mail: its index opens and catches up at each unlock.
  useEffect(() => startLocalIndex(), []);
  const set = (patch: Partial<SearchForm>) => setForm((f) => ({ ...f, ...patch }));
  const text = (key: 'from' | 'to' | 'subject', label: string) => (
    <label>
      {label} <input type="text" value={form[key]} onChange={(e) => set({ [key]: e.target.value })} />
    </label>
  );
  return (
    <form
      role="search"
      aria-label="Search mail"
      className="search"
      onSubmit={(e) => {
        e.preventDefault();
        if (asksSomething(form)) onSearch(form);
      }}
    >
      <input
        id={SEARCH_INPUT_ID}
        type="search"
        aria-label="Search words"
        placeholder="Search mail"
        value={form.q}
        onChange={(e) => set({ q: e.target.value })}
      />{' '}
      <button type="submit">Search</button>{' '}
      <button
        type="button"
        className="secondary"
        onClick={() => {
          setForm(EMPTY_SEARCH);
          onClear();
        }}
      >
        Clear
      </button>{' '}
      <IndexStatusLine />
      <details className="search-filters">
        <summary>Filters</summary>
        {text('from', 'From')}
        {text('to', 'To')}
        {text('subject', 'Subject')}
        <label>
          <input type="checkbox" checked={form.hasAttachments} onChange={(e) => set({ hasAttachments: e.target.checked })} /> Has
          attachments
        </label>
        <label>
          After <input type="date" value={form.after} onChange={(e) => set({ after: e.target.value })} />
        </label>
        <label>
          Until <input type="date" value={form.before} onChange={(e) => set({ before: e.target.value })} />
        </label>
        <label>
          Folder{' '}
          <select value={form.folderUid} onChange={(e) => set({ folderUid: e.target.value })}>
            <option value="">All folders</option>
            {folders.map((f) => (
              <option key={f.uid} value={f.uid}>
                {f.name}
              </option>
            ))}
          </select>
        </label>
      </details>
    </form>
  );
}

/**
 * The results of a search, newest first, a page at a time; a result opens in the reading pane. With
 * the mailbox's keys unlocked, encrypted mail matching the words (from the local index) is among them.
 */
export function SearchResults({
  mailboxUid,
  form,
  selected,
  onOpen,
}: {
  mailboxUid: string;
  form: SearchForm;
  selected: string;
  onOpen(m: Message): void;
}) {
  const [rows, setRows] = useState<Message[] | null>(null);
  const [more, setMore] = useState(false);
  const [page, setPage] = useState(0);
  const [error, setError] = useState<unknown>(null);
  const local = useLocalResults(mailboxUid, form);
  const shown = useMemo(() => (rows ? merged(rows, local.rows ?? []) : null), [rows, local.rows]);
  useEffect(() => {
    let live = true;
    api<Message[]>(`/api/mail/search?${searchQuery(mailboxUid, form, page, PAGE)}`).then((found) => {
      if (!live) return;
      setRows((r) => (page === 0 ? found : [...(r ?? []), ...found]));
      setMore(found.length === PAGE);
    }, setError);
    return () => {
      live = false;
    };
  }, [mailboxUid, form, page]);
  if (error !== null) return <ErrorBox error={error} />;
  if (!shown)
    return (
      <p className="muted" aria-busy="true">
        Searching…
      </p>
    );
  return (
    <div className="results">
      <p role="status" className="muted">
        {shown.length ? `${shown.length}${more ? '+' : ''} found.` : 'No messages match.'}
        {localNote(form, local)}
      </p>
      {local.notSearched > 0 && <UnlockToSearch mailboxUid={mailboxUid} />}
      <ul role="listbox" aria-label="Search results" className="list">
        {shown.map((m) => (
          <li
            key={m.uid}
            role="option"
            data-message={m.uid}
            aria-selected={m.uid === selected}
            tabIndex={0}
            className={m.seen ? '' : 'unread'}
            onClick={() => onOpen(m)}
            onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && (e.preventDefault(), onOpen(m))}
          >
            <RowContent m={m} />
          </li>
        ))}
      </ul>
      {more && (
        <button type="button" className="secondary" onClick={() => setPage((p) => p + 1)}>
          More results
        </button>
      )}
    </div>
  );
}
