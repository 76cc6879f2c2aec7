import { useCallback, useEffect, useState, type ReactNode } from 'react';
import { api, countOf, when } from './api.js';
import { Outcome, useRun, type Run } from './outcome.js';

export interface Column<T> {
  label: string;
  cell(row: T): ReactNode;
}

interface Props<T> {
  /** The table's name for screen readers ("Mailboxes"). */
  label: string;
  /** The list URL with its query (filters, sort, scope=admin); limit and page are added. */
  path: string;
  columns: Array<Column<T>>;
  actions?: (row: T, run: Run) => ReactNode;
  /** Changed by the caller to read the list again (a record made elsewhere on the view). */
  version?: number;
  empty?: string;
  pageSize?: number;
}

const withParams = (path: string, params: string) => `${path}${path.includes('?') ? '&' : '?'}${params}`;

/**
 * A page of a resource's records as a table, with the count and the way to the next and previous
 * pages; each row's actions run through `run`, which tells what became of them and reads the page
 * again.
 */
export function RecordTable<T extends { uid: string }>({ label, path, columns, actions, version = 0, empty, pageSize = 50 }: Props<T>) {
  const [page, setPage] = useState(0);
  const [rows, setRows] = useState<T[] | null>(null);
  const [total, setTotal] = useState(0);
  const load = useCallback(async () => {
    const [r, n] = await Promise.all([api<T[]>(withParams(path, `limit=${pageSize}&page=${page}`)), countOf(path)]);
    setRows(r);
    setTotal(n);
  }, [path, page, pageSize]);
  const { error, setError, told, run } = useRun(load);
  useEffect(() => {
    load().catch(setError);
  }, [load, version, setError]);
  useEffect(() => setPage(0), [path]);
  const pages = Math.max(1, Math.ceil(total / pageSize));
  return (
    <div className="record-table">
      <Outcome error={error} told={told} />
      <Table<T> label={label} rows={rows} columns={columns} empty={empty} actions={actions && ((r: T) => actions(r, run))} />
      {total > pageSize && (
        <nav className="toolbar" aria-label={`${label}: pages`}>
          <button type="button" className="secondary" disabled={page === 0} onClick={() => setPage(page - 1)}>
            Previous
          </button>
          <span>
            Page {page + 1} of {pages} ({total})
          </span>
          <button type="button" className="secondary" disabled={page + 1 >= pages} onClick={() => setPage(page + 1)}>
            Next
          </button>
        </nav>
      )}
    </div>
  );
}

interface TableProps<T> {
  label: string;
  /** null while they are read. */
  rows: T[] | null;
  columns: Array<Column<T>>;
  actions?: (row: T) => ReactNode;
  /** What an empty list says. */
  empty?: string;
  /** Marks a row that needs attention (class "problem"). */
  problem?: (row: T) => boolean;
  /** The row's key (default: its uid). */
  keyOf?: (row: T) => string;
}

/** Records as a table that scrolls sideways on a narrow screen; "Loading…" until they are here, `empty` when there are none. */
export function Table<T>({ label, rows, columns, actions, empty, problem, keyOf }: TableProps<T>) {
  if (rows === null) return <p className="muted">Loading…</p>;
  if (rows.length === 0) return <p className="muted">{empty ?? 'None.'}</p>;
  const key = keyOf ?? ((r: T) => (r as { uid: string }).uid);
  return (
    <div className="table-scroll">
      <table aria-label={label}>
        <thead>
          <tr>
            {columns.map((c) => (
              <th key={c.label} scope="col">
                {c.label}
              </th>
            ))}
            {actions && (
              <th scope="col">
                <span className="visually-hidden">Actions</span>
              </th>
            )}
          </tr>
        </thead>
        <tbody>
          {rows.map((r) => (
            <tr key={key(r)} className={problem?.(r) ? 'problem' : undefined}>
              {columns.map((c) => (
                <td key={c.label}>{c.cell(r)}</td>
              ))}
              {actions && <td className="actions">{actions(r)}</td>}
            </tr>
          ))}
        </tbody>
      </table>
    </div>
  );
}

/** A date and time as the reader's locale writes it. */
export const at = (iso: unknown): string => (typeof iso === 'string' && iso ? when(iso) : '—');

/** Bytes as KB, MB, GB. */
export function bytes(n: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB'];
  let i = 0;
  let v = n;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return `${i ? v.toFixed(1) : v} ${units[i]}`;
}

interface RemoveProps {
  /** The record's URL and version (DELETE with {version}: a record changed meanwhile is not removed). */
  path: string;
  version: number;
  /** What the button says, the question asked first (none: no question), and the change in words (offered again after elevation). */
  text: string;
  question?: string;
  label: string;
  /** What the status line says afterwards. */
  done: string;
  run: Run;
}

/** A row's delete (or withdraw) button: asks first, then DELETE with the version read. */
export function RemoveButton({ path, version, text, question, label, done, run }: RemoveProps) {
  return (
    <button
      type="button"
      className="secondary"
      onClick={() => (!question || confirm(question)) && void run(() => api(path, { method: 'DELETE', body: { version }, label }), done)}
    >
      {text}
    </button>
  );
}
