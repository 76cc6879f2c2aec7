import { useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at, bytes, RecordTable, RemoveButton } from '../shared/RecordTable.js';
import { saveFile } from '../shared/files.js';

interface Held {
  uid: string;
  version: number;
  createdAt: string;
  recipient: string;
  envelopeFrom: string;
  from: string;
  subject: string;
  size: number;
  reason: 'virus' | 'virus-scan-failed' | 'transport-rule' | 'over-quota';
  detail: string | null;
}

const REASONS: Record<Held['reason'], string> = {
  virus: 'Virus found',
  'virus-scan-failed': 'Virus scan failed',
  'transport-rule': 'Transport rule',
  'over-quota': 'Mailbox full',
};

/**
 * Messages held for an administrator, with why (the scanner's verdict or the rule): released to the
 * recipient's Inbox, deleted, or their header block read and saved for analysis — never the body,
 * which is the recipient's mail.
 */
export default function Quarantine() {
  const [headers, setHeaders] = useState<{ item: Held; text: string } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const show = async (item: Held) => {
    setError(null);
    try {
      const r = await api<{ headers: string }>(`/api/mail/quarantine/${item.uid}/headers`);
      setHeaders({ item, text: r.headers });
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <ErrorBox error={error} />
      <RecordTable<Held>
        label="Held messages"
        path="/api/mail/quarantine?sort=-createdAt"
        empty="Nothing is held."
        columns={[
          { label: 'Held since', cell: (q) => at(q.createdAt) },
          { label: 'To', cell: (q) => q.recipient },
          { label: 'From', cell: (q) => q.from || q.envelopeFrom || '(none)' },
          { label: 'Subject', cell: (q) => q.subject || '(no subject)' },
          { label: 'Why', cell: (q) => `${REASONS[q.reason]}${q.detail ? `: ${q.detail}` : ''}` },
          { label: 'Size', cell: (q) => bytes(q.size) },
        ]}
        actions={(q, run) => (
          <>
            <button type="button" className="secondary" onClick={() => void show(q)}>
              Headers
            </button>{' '}
            <button
              type="button"
              onClick={() =>
                confirm(`Release the message to ${q.recipient}'s Inbox?`) &&
                void run(
                  () =>
                    api(`/api/mail/quarantine/${q.uid}/release`, { method: 'POST', label: `Release the held message to ${q.recipient}` }),
                  `Released to ${q.recipient}'s Inbox.`,
                )
              }
            >
              Release
            </button>{' '}
            <RemoveButton
              path={`/api/mail/quarantine/${q.uid}`}
              version={q.version}
              text="Delete"
              question="Delete the held message for good?"
              label="Delete a held message"
              done="Deleted."
              run={run}
            />
          </>
        )}
      />
      {headers && (
        <section aria-labelledby="headers-title" className="card">
          <h3 id="headers-title">Headers of “{headers.item.subject || '(no subject)'}”</h3>
          <pre className="headers">{headers.text}</pre>
          <button
            type="button"
            className="secondary"
            onClick={() => saveFile(`held-${headers.item.uid}.txt`, [headers.text], 'text/plain')}
          >
            Download headers
          </button>{' '}
          <button type="button" className="secondary" onClick={() => setHeaders(null)}>
            Close
          </button>
        </section>
      )}
    </>
  );
}
