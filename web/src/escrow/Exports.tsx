import { at, bytes, RecordTable } from '../shared/RecordTable.js';
import type { MatterExport } from './types.js';

const STATES: Record<MatterExport['state'], string> = {
  pending: 'Being built',
  ready: 'Ready',
  failed: 'Failed: ask for a new one',
  expired: 'Expired',
};

/** Matter exports: the messages as mboxrd (encrypted content stays ciphertext) and a manifest with each message's SHA-256. */
export default function Exports() {
  return (
    <RecordTable<MatterExport>
      label="Matter exports"
      path="/api/escrow/matter-export-requests?sort=-createdAt"
      empty="No matter export yet: an approved request's Investigate asks for one."
      columns={[
        { label: 'Asked', cell: (e) => `${at(e.createdAt)} by ${e.requester}` },
        { label: 'State', cell: (e) => STATES[e.state] },
        { label: 'Messages', cell: (e) => (e.messageCount === null ? '—' : `${e.messageCount} (${bytes(e.mboxSize ?? 0)})`) },
        { label: 'Until', cell: (e) => at(e.expiresAt) },
        {
          label: 'Files',
          cell: (e) =>
            e.state === 'ready' ? (
              <>
                <a href={`/api/escrow/matter-export-requests/${e.uid}/download`} download>
                  messages.mbox
                </a>{' '}
                <a href={`/api/escrow/matter-export-requests/${e.uid}/manifest`} download>
                  manifest.json
                </a>
              </>
            ) : (
              '—'
            ),
        },
      ]}
    />
  );
}
