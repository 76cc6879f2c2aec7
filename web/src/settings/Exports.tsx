import { bytes, when } from '../shared/api.js';
import { Section } from '../shared/Section.js';
import { create, useRecords, type Rec } from '../shared/records.js';
import type { MailboxRec } from './Senders.js';

interface ExportRequest extends Rec {
  createdAt: string;
  state: string;
  expiresAt: string | null;
  download?: string;
}

/** Quota use, and exports of the whole mailbox: ask for one, follow it, download it. */
export function Exports({ box }: { box: MailboxRec }) {
  const { rows, error, run } = useRecords<ExportRequest>(
    `/api/mail/data-export-requests?mailboxUid=${encodeURIComponent(box.uid)}&sort=-createdAt`,
  );
  return (
    <Section id="data" title="Storage and export" error={error}>
      <p>
        {bytes(box.usedBytes ?? 0)} used{box.quotaBytes ? ` of ${bytes(box.quotaBytes)}` : ''}
      </p>
      {rows && rows.length > 0 && (
        <table>
          <thead>
            <tr>
              <th>Export</th>
              <th>State</th>
              <th>Expires</th>
              <th>
                <span className="visually-hidden">Download</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {rows.map((x) => (
              <tr key={x.uid}>
                <td>{when(x.createdAt)}</td>
                <td>{x.state}</td>
                <td>{when(x.expiresAt)}</td>
                <td>{x.download ? <a href={x.download}>Download</a> : ''}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <button type="button" onClick={() => void run(() => create('data-export-requests', { mailboxUid: box.uid }))}>
        Export this mailbox
      </button>
    </Section>
  );
}
