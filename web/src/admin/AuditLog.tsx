import { useEffect, useRef, useState } from 'react';
import { api } from '../shared/api.js';
import { saveFile } from '../shared/files.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at, RecordTable } from '../shared/RecordTable.js';

/** An audit entry (lib/audit/index.ts). */
interface AuditEntry {
  uid: string;
  actor: string;
  actorVia: string;
  action: string;
  resource?: string | null;
  resourceUid?: string | null;
  ip?: string | null;
  requestId?: string | null;
  before?: Record<string, unknown> | null;
  after?: Record<string, unknown> | null;
  details?: Record<string, unknown> | null;
  createdAt: string;
}

type Filters = Record<'actor' | 'action' | 'resource', string>;
const NO_FILTERS: Filters = { actor: '', action: '', resource: '' };

/** The export: pages of the API's largest size, and a bound on how much one export fetches. */
const EXPORT_PAGE = 1000;
const EXPORT_PAGES = 50;

/** The list's query: each filter that is set, by exact value (the generic list filters by field equality). */
function queryOf(filters: Filters): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(filters)) if (v.trim()) q.set(k, v.trim());
  return q.toString();
}

/** What changed and what the service noted, as JSON text (React writes it as text, never as HTML). */
function Changes({ e }: { e: AuditEntry }) {
  const parts = (['before', 'after', 'details'] as const).filter((k) => e[k] && Object.keys(e[k]).length);
  if (!parts.length) return <>—</>;
  return (
    <details>
      <summary>Details</summary>
      {parts.map((k) => (
        <div key={k}>
          <strong>{k}</strong>
          <pre>{JSON.stringify(e[k], null, 2)}</pre>
        </div>
      ))}
    </details>
  );
}

/** Hands the entries to the browser as a JSON Lines file. */
const download = (entries: AuditEntry[]) =>
  saveFile(
    'audit-log.jsonl',
    entries.map((e) => `${JSON.stringify(e)}\n`),
    'application/jsonl',
  );

/**
 * Fetches every entry matching the filters, newest first, page by page until a short page (at most
 * EXPORT_PAGES), and downloads them. Entries written meanwhile push older ones onto the next page:
 * those seen twice are kept once.
 */
function useExport(query: string) {
  const [progress, setProgress] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const abort = useRef<AbortController | null>(null);
  useEffect(() => () => abort.current?.abort(), []); // leaving the view stops the export
  const start = async () => {
    const ctl = new AbortController();
    abort.current = ctl;
    setBusy(true);
    setError(null);
    const seen = new Map<string, AuditEntry>();
    try {
      let page = 0;
      for (; page < EXPORT_PAGES; page++) {
        setProgress(`Fetching page ${page + 1}… ${seen.size} entries so far.`);
        const rows = await api<AuditEntry[]>(`/api/mail/audit-log?${query ? `${query}&` : ''}limit=${EXPORT_PAGE}&page=${page}`, {
          signal: ctl.signal,
        });
        for (const r of rows) if (!seen.has(r.uid)) seen.set(r.uid, r);
        if (rows.length < EXPORT_PAGE) break;
      }
      download([...seen.values()]);
      const capped = page === EXPORT_PAGES ? ` It stopped after ${EXPORT_PAGES} pages: narrow the filters for older entries.` : '';
      setProgress(`Exported ${seen.size} entries.${capped}`);
    } catch (e) {
      if (ctl.signal.aborted) return;
      setError(e);
      setProgress('');
    } finally {
      setBusy(false);
    }
  };
  return { start, progress, error, busy };
}

/** The filters, applied when the form is sent (not on each key: every list is a query). */
function FilterForm({ apply }: { apply(f: Filters): void }) {
  const [draft, setDraft] = useState<Filters>(NO_FILTERS);
  const field = (k: keyof Filters, label: string, example: string) => (
    <label>
      {label} <input type="text" value={draft[k]} placeholder={example} onChange={(e) => setDraft({ ...draft, [k]: e.target.value })} />
    </label>
  );
  return (
    <form
      className="toolbar"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault();
        apply(draft);
      }}
    >
      {field('actor', 'Actor', 'user uid')}
      {field('action', 'Action', 'domains.update')}
      {field('resource', 'Resource', 'domains')}
      <button type="submit">Filter</button>
      <button
        type="button"
        className="secondary"
        onClick={() => {
          setDraft(NO_FILTERS);
          apply(NO_FILTERS);
        }}
      >
        Clear filters
      </button>
    </form>
  );
}

/** The audit log, newest first: filters by exact actor, action and resource, each entry's changes, and the export as JSON Lines. */
export default function AuditLog() {
  const [filters, setFilters] = useState<Filters>(NO_FILTERS);
  const query = queryOf(filters);
  const exp = useExport(query);
  return (
    <>
      <p className="muted">Filters match exact values (an action such as domains.update, a resource such as domains).</p>
      <FilterForm apply={setFilters} />
      <p className="toolbar">
        <button type="button" disabled={exp.busy} onClick={() => void exp.start()}>
          {exp.busy ? 'Exporting…' : 'Export'}
        </button>
        <span role="status">{exp.progress}</span>
      </p>
      <ErrorBox error={exp.error} />
      <RecordTable<AuditEntry>
        label="Audit log"
        path={`/api/mail/audit-log${query ? `?${query}` : ''}`}
        empty={query ? 'No entry matches these filters.' : 'No entry yet.'}
        columns={[
          { label: 'When', cell: (e) => at(e.createdAt) },
          {
            label: 'Actor',
            cell: (e) => (
              <>
                {e.actor}
                <div className="muted">{e.actorVia}</div>
              </>
            ),
          },
          { label: 'Action', cell: (e) => e.action },
          {
            label: 'Resource',
            cell: (e) => (
              <>
                {e.resource ?? '—'}
                {e.resourceUid && <div className="muted">{e.resourceUid}</div>}
              </>
            ),
          },
          {
            label: 'From',
            cell: (e) => (
              <>
                {e.ip ?? '—'}
                {e.requestId && <div className="muted">request {e.requestId}</div>}
              </>
            ),
          },
          { label: 'Changes', cell: (e) => <Changes e={e} /> },
        ]}
      />
    </>
  );
}
