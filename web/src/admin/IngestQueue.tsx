import { useState } from 'react';
import { api } from '../shared/api.js';
import { at, bytes, RecordTable } from '../shared/RecordTable.js';

interface Entry {
  uid: string;
  version: number;
  createdAt: string;
  recipient: string;
  envelopeFrom: string;
  size: number;
  state: string;
  attempts: number;
  lastError: string | null;
  verdict: Record<string, unknown> | null;
}

const STATES = ['failed', 'queued', 'delivered', 'junk', 'quarantined', 'consumed', 'discarded'];
const FINISHED = new Set(['failed', 'delivered', 'junk', 'quarantined', 'consumed', 'discarded']);

/** What the scanners said, in a few words. */
function verdictOf(v: Entry['verdict']): string {
  if (!v) return '—';
  return Object.entries(v)
    .filter(([, x]) => typeof x !== 'object')
    .map(([k, x]) => `${k}: ${String(x)}`)
    .join(', ');
}

/** Inbound messages per recipient and their state; a failed entry is queued again with Retry. */
export default function IngestQueue() {
  const [state, setState] = useState('failed');
  return (
    <>
      <label>
        Show{' '}
        <select value={state} onChange={(e) => setState(e.target.value)}>
          {STATES.map((s) => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
      </label>
      <RecordTable<Entry>
        label={`Ingest entries: ${state}`}
        path={`/api/mail/ingest-queue?state=${state}&sort=-createdAt`}
        empty={`No ${state} entries.`}
        columns={[
          { label: 'Received', cell: (e) => at(e.createdAt) },
          { label: 'To', cell: (e) => e.recipient },
          { label: 'From', cell: (e) => e.envelopeFrom || '(bounce)' },
          { label: 'Size', cell: (e) => bytes(e.size) },
          { label: 'Attempts', cell: (e) => e.attempts },
          { label: 'Last error', cell: (e) => e.lastError ?? '—' },
          { label: 'Verdict', cell: (e) => verdictOf(e.verdict) },
        ]}
        actions={(e, run) =>
          FINISHED.has(e.state) && (
            <button
              type="button"
              onClick={() =>
                void run(
                  () => api(`/api/mail/ingest-queue/${e.uid}/retry`, { method: 'POST', label: `Retry the delivery to ${e.recipient}` }),
                  `Queued again for ${e.recipient}.`,
                )
              }
            >
              Retry
            </button>
          )
        }
      />
    </>
  );
}
