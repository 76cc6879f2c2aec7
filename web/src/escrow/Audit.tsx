import { useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { RecordTable } from '../shared/RecordTable.js';

interface Entry {
  uid: string;
  seq: number;
  at: string;
  actor: string;
  action: string;
  details: Record<string, unknown>;
  alg: string;
}

interface Verdict {
  ok: boolean;
  entries: number;
  brokenAt?: { seq: number; reason: string };
}

/** The escrow audit log of the scopes the caller holds, and the whole chain's verification. */
export default function Audit() {
  const [verdict, setVerdict] = useState<Verdict | null>(null);
  const [error, setError] = useState<unknown>(null);
  const verify = async () => {
    setError(null);
    try {
      setVerdict(await api<Verdict>('/api/escrow/audit-log/verify'));
    } catch (e) {
      setError(e);
    }
  };
  return (
    <>
      <p className="toolbar">
        <button type="button" onClick={() => void verify()}>
          Verify the chain
        </button>
        <span role="status">
          {verdict &&
            (verdict.ok
              ? `Verified: all ${verdict.entries} entries link up and match their hashes.`
              : `Broken at entry ${verdict.brokenAt?.seq}: ${verdict.brokenAt?.reason}.`)}
        </span>
      </p>
      <ErrorBox error={error} />
      <RecordTable<Entry>
        label="Escrow audit entries"
        path="/api/escrow/audit-log"
        empty="No entry yet."
        columns={[
          { label: '#', cell: (e) => e.seq },
          { label: 'When', cell: (e) => new Date(e.at).toLocaleString() },
          { label: 'Who', cell: (e) => e.actor },
          { label: 'What', cell: (e) => e.action },
          { label: 'Details', cell: (e) => <code>{JSON.stringify(e.details)}</code> },
        ]}
      />
    </>
  );
}
