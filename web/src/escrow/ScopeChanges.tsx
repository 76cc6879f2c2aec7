import { useCallback, useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ListInput } from '../shared/ListInput.js';
import { Outcome, useRun } from '../shared/outcome.js';
import { at, Table } from '../shared/RecordTable.js';
import type { Scope } from './types.js';

interface Change {
  uid: string;
  requester: string;
  reason: string;
  holders: string[] | null;
  approvalsRequired: number | null;
  baseHolders: string[];
  baseApprovalsRequired: number;
  state: 'pending' | 'applied' | 'withdrawn' | 'superseded';
  createdAt: string;
  approvals: Array<{ holder: string; approvedAt: string; valid: boolean }>;
}

const STATES: Record<Change['state'], string> = {
  pending: 'Waiting for approvals',
  applied: 'In force',
  withdrawn: 'Withdrawn',
  superseded: 'Superseded',
};

/** What a change does, in words. */
const whatOf = (c: Change) =>
  [
    c.holders && `holders ${c.baseHolders.join(', ')} → ${c.holders.join(', ')}`,
    c.approvalsRequired !== null && `M ${c.baseApprovalsRequired} → ${c.approvalsRequired}`,
  ]
    .filter(Boolean)
    .join('; ');

/** Proposes new holders and/or a new M; it takes effect once M of the current holders approve it. */
function Propose({ scope, proposed }: { scope: Scope; proposed(): void }) {
  const [holders, setHolders] = useState(scope.holders);
  const [m, setM] = useState(scope.approvalsRequired);
  const [reason, setReason] = useState('');
  const send = async () => {
    const body = {
      reason,
      ...(holders.join() !== scope.holders.join() ? { holders } : {}),
      ...(m !== scope.approvalsRequired ? { approvalsRequired: m } : {}),
    };
    await api(`/api/escrow/scopes/${scope.uid}/changes`, { method: 'POST', body, label: `Propose a change of the scope ${scope.name}` });
    setReason('');
    proposed();
  };
  return (
    <CardForm title={`Change the holders or M of ${scope.name}`} submit={send}>
      <label>
        Holders (comma-separated)
        <ListInput label="Holders (comma-separated)" values={holders} onChange={setHolders} />
      </label>
      <label>
        Approvals required (M) <input type="number" min={1} required value={m} onChange={(e) => setM(Number(e.target.value))} />
      </label>
      <label>
        Reason (kept in the escrow audit log) <textarea required rows={2} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <span>
        <button type="submit">Propose</button>
      </span>
    </CardForm>
  );
}

/** A scope's proposed changes of holders and M, each approved by holders (M of the current ones apply it) or withdrawn by its requester. */
export function ScopeChanges({ scope }: { scope: Scope }) {
  const [changes, setChanges] = useState<Change[] | null>(null);
  const load = useCallback(() => api<Change[]>(`/api/escrow/scopes/${scope.uid}/changes`).then(setChanges), [scope.uid]);
  const { error, setError, told, run } = useRun(load);
  useEffect(() => {
    load().catch(setError);
  }, [load, setError]);
  const act = (c: Change, what: 'approve' | 'withdraw') =>
    void run(
      () =>
        api(`/api/escrow/scopes/${scope.uid}/changes/${c.uid}/${what}`, {
          method: 'POST',
          label: `${what === 'approve' ? 'Approve' : 'Withdraw'} a change of ${scope.name}`,
        }),
      what === 'approve' ? 'Approved.' : 'Withdrawn.',
    );
  return (
    <section aria-labelledby={`changes-${scope.uid}`} className="card">
      <h3 id={`changes-${scope.uid}`}>Changes of {scope.name}</h3>
      <Outcome error={error} told={told} />
      <Table<Change>
        label={`Changes of ${scope.name}`}
        rows={changes}
        empty="No change proposed."
        columns={[
          { label: 'Proposed', cell: (c) => `${at(c.createdAt)} by ${c.requester}: ${c.reason}` },
          { label: 'Change', cell: whatOf },
          { label: 'State', cell: (c) => STATES[c.state] },
          { label: 'Approvals', cell: (c) => c.approvals.map((a) => `${a.holder}${a.valid ? '' : ' (expired)'}`).join(', ') || '—' },
        ]}
        actions={(c) =>
          c.state === 'pending' && (
            <>
              <button type="button" onClick={() => act(c, 'approve')}>
                Approve
              </button>{' '}
              <button type="button" className="secondary" onClick={() => act(c, 'withdraw')}>
                Withdraw
              </button>
            </>
          )
        }
      />
      <Propose scope={scope} proposed={() => void load().catch(setError)} />
    </section>
  );
}
