import { useCallback, useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { ListInput } from '../shared/ListInput.js';
import { useMailboxes } from '../shared/mailbox-pick.js';
import { RecordTable } from '../shared/RecordTable.js';
import { ScopeChanges } from './ScopeChanges.js';
import type { Scope } from './types.js';

/** A new scope: its certificate (the holders keep the private key), the holders (the caller among them) and M. */
function NewScope({ created }: { created(): void }) {
  const [form, setForm] = useState({ name: '', certificatePem: '', holders: [] as string[], approvalsRequired: 2 });
  const save = async () => {
    await api('/api/escrow/scopes', { method: 'POST', body: form, label: `Create the escrow scope ${form.name}` });
    setForm({ name: '', certificatePem: '', holders: [], approvalsRequired: 2 });
    created();
  };
  return (
    <CardForm title="New scope" submit={save}>
      <label>
        Name <input type="text" required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
      </label>
      <label>
        Certificate (P-256, PEM; its private key stays with the holders)
        <textarea rows={4} required value={form.certificatePem} onChange={(e) => setForm({ ...form, certificatePem: e.target.value })} />
      </label>
      <label>
        Holders (sign-in user names, comma-separated; you among them)
        <ListInput
          label="Holders (sign-in user names, comma-separated; you among them)"
          values={form.holders}
          onChange={(holders) => setForm({ ...form, holders })}
        />
      </label>
      <label>
        Approvals required (M){' '}
        <input
          type="number"
          min={1}
          required
          value={form.approvalsRequired}
          onChange={(e) => setForm({ ...form, approvalsRequired: Number(e.target.value) })}
        />
      </label>
      <span>
        <button type="submit">Create scope</button>
      </span>
    </CardForm>
  );
}

/** The mailboxes assigned to a scope (and whether their owners added the escrow wrap); another one assigned. */
function Assigned({ scope }: { scope: Scope }) {
  const { boxes, addressOf } = useMailboxes();
  const [rows, setRows] = useState<Array<{ mailboxUid: string; hasEscrowWrap: boolean }>>([]);
  const [pick, setPick] = useState('');
  const [error, setError] = useState<unknown>(null);
  const load = useCallback(() => api<typeof rows>(`/api/escrow/scopes/${scope.uid}/mailboxes`).then(setRows, setError), [scope.uid]);
  useEffect(() => {
    void load();
  }, [load]);
  const assign = async () => {
    setError(null);
    try {
      await api(`/api/escrow/scopes/${scope.uid}/mailboxes`, {
        method: 'POST',
        body: { mailboxUid: pick },
        label: `Assign a mailbox to ${scope.name}`,
      });
      setPick('');
      await load();
    } catch (e) {
      setError(e);
    }
  };
  return (
    <div>
      <ErrorBox error={error} />
      <ul className="plain">
        {rows.map((r) => (
          <li key={r.mailboxUid}>
            {addressOf(r.mailboxUid)} — {r.hasEscrowWrap ? 'escrow wrap in place' : 'waiting for its owner to add the escrow wrap'}
          </li>
        ))}
      </ul>
      <label>
        Assign{' '}
        <select value={pick} onChange={(e) => setPick(e.target.value)}>
          <option value="">a mailbox…</option>
          {boxes
            ?.filter((b) => !rows.some((r) => r.mailboxUid === b.uid))
            .map((b) => (
              <option key={b.uid} value={b.uid}>
                {b.address}
              </option>
            ))}
        </select>
      </label>{' '}
      <button type="button" className="secondary" disabled={!pick} onClick={() => void assign()}>
        Assign
      </button>
    </div>
  );
}

/** The scopes the caller holds: certificate, holders, M, and the mailboxes assigned. */
export default function Scopes() {
  const [version, setVersion] = useState(0);
  const [changing, setChanging] = useState<Scope | null>(null);
  return (
    <>
      <NewScope created={() => setVersion((v) => v + 1)} />
      <RecordTable<Scope>
        label="Scopes"
        path="/api/escrow/scopes?sort=name"
        version={version}
        empty="You hold no escrow scope."
        columns={[
          { label: 'Scope', cell: (s) => s.name },
          { label: 'Holders', cell: (s) => s.holders.join(', ') },
          { label: 'Approvals required', cell: (s) => `${s.approvalsRequired} of ${s.holders.length}` },
          { label: 'Mailboxes', cell: (s) => <Assigned scope={s} /> },
        ]}
        actions={(s) => (
          <button type="button" className="secondary" onClick={() => setChanging(s)}>
            Holders and M
          </button>
        )}
      />
      {changing && <ScopeChanges key={changing.uid} scope={changing} />}
    </>
  );
}
