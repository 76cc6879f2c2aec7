import { useState, type ReactNode } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at, bytes, RecordTable, RemoveButton } from '../shared/RecordTable.js';
import { MailboxReasonForm, useMailboxes, type AdminMailbox } from '../shared/mailbox-pick.js';

/** Work done of all as a bar; the text beside it says the numbers and names the bar. */
function Progress({ done, total, text }: { done: number; total: number; text: string }) {
  return (
    <label>
      <progress max={total} value={Math.min(done, total)} /> {text}
    </label>
  );
}

/** One of the page's three parts: its heading, what it is for, the way to read it again, its content. */
function Part({ id, title, intro, refresh, children }: { id: string; title: string; intro: string; refresh(): void; children: ReactNode }) {
  return (
    <section aria-labelledby={`${id}-title`}>
      <h3 id={`${id}-title`}>{title}</h3>
      <p className="muted">{intro}</p>
      <p className="toolbar">
        {/* No polling: each administrative read of these lists is audited. */}
        <button type="button" className="secondary" onClick={refresh}>
          Refresh {title.toLowerCase()}
        </button>
      </p>
      {children}
    </section>
  );
}

type AddressOf = (uid: string) => string;

/** An export, administrative view: that it exists and how it goes, never what it holds (lib/lifecycle/resources.ts). */
interface ExportRequest {
  uid: string;
  mailboxUid: string;
  state: 'pending' | 'running' | 'ready' | 'expired' | 'failed';
  initiatedBy: 'owner' | 'admin';
  requestedBy: string;
  reason: string;
  /** Messages written of all; not in every view of the record. */
  progress?: { done: number; total: number };
  createdAt: string;
  finishedAt: string | null;
  expiresAt: string | null;
  error: string | null;
}

const EXPORT_STATES: Record<ExportRequest['state'], string> = {
  pending: 'Waiting',
  running: 'Running',
  ready: 'Ready for the owner',
  expired: 'Expired',
  failed: 'Failed',
};

/** Exports: the list, and an export started for the owner (who alone downloads it). */
function Exports({ boxes, addressOf }: { boxes: AdminMailbox[] | null; addressOf: AddressOf }) {
  const [version, setVersion] = useState(0);
  const start = async (box: AdminMailbox, reason: string) => {
    await api('/api/mail/data-export-requests/on-behalf', {
      method: 'POST',
      body: { mailboxUid: box.uid, reason },
      label: `Export the mailbox ${box.address} for its owner`,
    });
    setVersion((v) => v + 1);
    return true;
  };
  return (
    <Part
      id="exports"
      title="Exports"
      intro="An export is a zip of the whole mailbox. You can start one for the owner; only the owner can download it, until it expires."
      refresh={() => setVersion((v) => v + 1)}
    >
      <MailboxReasonForm name="New export for the owner" boxes={boxes} action="Start the export" send={start} />
      <RecordTable<ExportRequest>
        label="Exports"
        path="/api/mail/data-export-requests?scope=admin&sort=-createdAt"
        version={version}
        empty="No export yet."
        columns={[
          { label: 'Mailbox', cell: (r) => addressOf(r.mailboxUid) },
          { label: 'Asked by', cell: (r) => (r.initiatedBy === 'owner' ? 'The owner' : `${r.requestedBy} (administrator)`) },
          { label: 'Reason', cell: (r) => r.reason || '—' },
          { label: 'State', cell: (r) => `${EXPORT_STATES[r.state]}${r.error ? `: ${r.error}` : ''}` },
          {
            label: 'Progress',
            cell: (r) =>
              r.progress && r.progress.total > 0 ? (
                <Progress done={r.progress.done} total={r.progress.total} text={`${r.progress.done} of ${r.progress.total} messages`} />
              ) : (
                '—'
              ),
          },
          { label: 'Asked', cell: (r) => at(r.createdAt) },
          { label: 'Finished', cell: (r) => at(r.finishedAt) },
          { label: 'Available until', cell: (r) => (r.state === 'ready' ? at(r.expiresAt) : '—') },
        ]}
      />
    </Part>
  );
}

/** An import, administrative view (lib/lifecycle/resources.ts). */
interface ImportRequest {
  uid: string;
  mailboxUid: string;
  state: 'pending' | 'running' | 'completed' | 'failed';
  format: 'mbox' | 'eml' | 'zip';
  requestedBy: string;
  uploadBytes: number;
  /** Bytes of the upload read so far; not in every view of the record. */
  bytesRead?: number;
  imported: number;
  skipped: number;
  failed: number;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
}

const IMPORT_STATES: Record<ImportRequest['state'], string> = {
  pending: 'Waiting',
  running: 'Running',
  completed: 'Completed',
  failed: 'Failed',
};

/** How far the worker has read the upload, or its size when that is not told. */
function uploadRead(r: ImportRequest): ReactNode {
  if (typeof r.bytesRead !== 'number' || !r.uploadBytes) return bytes(r.uploadBytes);
  return <Progress done={r.bytesRead} total={r.uploadBytes} text={`${bytes(r.bytesRead)} of ${bytes(r.uploadBytes)}`} />;
}

/** Imports the owners uploaded, with what became of each message. */
function Imports({ addressOf }: { addressOf: AddressOf }) {
  const [version, setVersion] = useState(0);
  return (
    <Part
      id="imports"
      title="Imports"
      intro="Owners upload an mbox, a message or a zip into their mailbox. Duplicates (same Message-ID) are skipped; each failed message is reported to the owner."
      refresh={() => setVersion((v) => v + 1)}
    >
      <RecordTable<ImportRequest>
        label="Imports"
        path="/api/mail/mailbox-import-requests?scope=admin&sort=-createdAt"
        version={version}
        empty="No import yet."
        columns={[
          { label: 'Mailbox', cell: (r) => addressOf(r.mailboxUid) },
          { label: 'Format', cell: (r) => r.format },
          { label: 'State', cell: (r) => `${IMPORT_STATES[r.state]}${r.error ? `: ${r.error}` : ''}` },
          { label: 'Upload read', cell: uploadRead },
          { label: 'Imported', cell: (r) => r.imported },
          { label: 'Skipped', cell: (r) => r.skipped },
          { label: 'Failed', cell: (r) => r.failed },
          { label: 'Asked', cell: (r) => at(r.createdAt) },
          { label: 'Finished', cell: (r) => at(r.finishedAt) },
        ]}
      />
    </Part>
  );
}

/** An erasure request (lib/lifecycle/models.ts). */
interface ErasureRequest {
  uid: string;
  version: number;
  mailboxUid: string;
  reason: string;
  /** The addresses the tombstones keep from reuse until released. */
  address: string;
  aliases: string[];
  state: 'pending' | 'running' | 'completed' | 'failed';
  requestedBy: string;
  /** Records deleted so far, by table. */
  deleted: Record<string, number>;
  blobFilesRemoved: number;
  createdAt: string;
  finishedAt: string | null;
  error: string | null;
}

const ERASURE_STATES: Record<ErasureRequest['state'], string> = {
  pending: 'Waiting',
  running: 'Erasing',
  completed: 'Completed',
  failed: 'Failed (a new request may follow)',
};

/** What the worker deleted so far: records by table, and stored files. */
function erased(r: ErasureRequest): ReactNode {
  const tables = Object.entries(r.deleted);
  const records = tables.reduce((n, [, c]) => n + c, 0);
  const text = `${records} records, ${r.blobFilesRemoved} stored files`;
  if (!tables.length) return text;
  return (
    <details>
      <summary>{text}</summary>
      <ul className="plain">
        {tables.map(([t, c]) => (
          <li key={t}>
            {t}: {c}
          </li>
        ))}
      </ul>
    </details>
  );
}

/** Erasures: the list, a new one (final, confirmed first), a waiting one withdrawn, the addresses of a completed one released. */
function Erasures({ boxes }: { boxes: AdminMailbox[] | null }) {
  const [version, setVersion] = useState(0);
  const erase = async (box: AdminMailbox, reason: string) => {
    const final = `Erase ${box.address}? Every message, folder, contact, calendar, key and the mailbox itself are deleted for good. This is final: it cannot be undone. Its addresses stay reserved until you release them.`;
    if (!confirm(final)) return false;
    await api('/api/mail/erasure-requests', {
      method: 'POST',
      body: { mailboxUid: box.uid, reason },
      label: `Erase the mailbox ${box.address}`,
    });
    setVersion((v) => v + 1);
    return true;
  };
  return (
    <Part
      id="erasures"
      title="Erasures"
      intro="Erasing deletes everything of a mailbox, then the mailbox. A mailbox held by an open escrow matter cannot be erased."
      refresh={() => setVersion((v) => v + 1)}
    >
      <MailboxReasonForm name="New erasure" boxes={boxes} action="Erase the mailbox" send={erase} />
      <RecordTable<ErasureRequest>
        label="Erasures"
        path="/api/mail/erasure-requests?sort=-createdAt"
        version={version}
        empty="No erasure yet."
        columns={[
          { label: 'Addresses', cell: (r) => [r.address, ...r.aliases].join(', ') },
          { label: 'Reason', cell: (r) => r.reason },
          { label: 'Asked by', cell: (r) => r.requestedBy },
          { label: 'State', cell: (r) => `${ERASURE_STATES[r.state]}${r.error ? `: ${r.error}` : ''}` },
          { label: 'Deleted', cell: erased },
          { label: 'Asked', cell: (r) => at(r.createdAt) },
          { label: 'Finished', cell: (r) => at(r.finishedAt) },
        ]}
        actions={(r, run) =>
          r.state === 'pending' ? (
            <RemoveButton
              path={`/api/mail/erasure-requests/${encodeURIComponent(r.uid)}`}
              version={r.version}
              text="Withdraw"
              label={`Withdraw the erasure of ${r.address}`}
              done={`The erasure of ${r.address} was withdrawn.`}
              run={run}
            />
          ) : r.state === 'completed' ? (
            <button
              type="button"
              className="secondary"
              onClick={() =>
                void run(
                  () =>
                    api(`/api/mail/erasure-requests/${encodeURIComponent(r.uid)}/release-addresses`, {
                      method: 'POST',
                      label: `Release the addresses of the erased mailbox ${r.address}`,
                    }),
                  `${[r.address, ...r.aliases].join(', ')} can be given to a new mailbox.`,
                )
              }
            >
              Release addresses
            </button>
          ) : null
        }
      />
    </Part>
  );
}

/** Exports, imports and erasures of whole mailboxes: how each goes, and those an administrator starts. */
export default function DataRequests() {
  const { boxes, error, addressOf } = useMailboxes();
  return (
    <>
      <ErrorBox error={error} />
      <Exports boxes={boxes} addressOf={addressOf} />
      <Imports addressOf={addressOf} />
      <Erasures boxes={boxes} />
    </>
  );
}
