import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { at, RecordTable } from '../shared/RecordTable.js';
import { useMailboxes } from '../shared/mailbox-pick.js';
import type { Matter, Scope } from './types.js';

interface Assigned {
  mailboxUid: string;
  hasEscrowWrap: boolean;
}

/** A new matter: a scope, custodians among the mailboxes assigned to it, and the period the investigation covers (fixed once made). */
function NewMatter({ scopes, created }: { scopes: Scope[]; created(): void }) {
  const [form, setForm] = useState({ name: '', description: '', scopeUid: '', custodians: [] as string[], from: '', to: '' });
  const [assigned, setAssigned] = useState<Assigned[]>([]);
  const [error, setError] = useState<unknown>(null);
  const { addressOf } = useMailboxes();
  useEffect(() => {
    if (form.scopeUid) api<Assigned[]>(`/api/escrow/scopes/${form.scopeUid}/mailboxes`).then(setAssigned, setError);
  }, [form.scopeUid]);
  const save = async () => {
    const body = { ...form, from: new Date(form.from).toISOString(), to: new Date(form.to).toISOString() };
    await api('/api/escrow/matters', { method: 'POST', body, label: `Open the matter ${form.name}` });
    setForm({ ...form, name: '', description: '', custodians: [] });
    created();
  };
  const toggle = (uid: string, on: boolean) =>
    setForm({ ...form, custodians: on ? [...form.custodians, uid] : form.custodians.filter((c) => c !== uid) });
  return (
    <CardForm title="New matter" submit={save}>
      <ErrorBox error={error} />
      <label>
        Name <input type="text" required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
      </label>
      <label>
        Description <textarea rows={2} value={form.description} onChange={(e) => setForm({ ...form, description: e.target.value })} />
      </label>
      <label>
        Scope{' '}
        <select required value={form.scopeUid} onChange={(e) => setForm({ ...form, scopeUid: e.target.value, custodians: [] })}>
          <option value="">Choose a scope you hold</option>
          {scopes.map((s) => (
            <option key={s.uid} value={s.uid}>
              {s.name}
            </option>
          ))}
        </select>
      </label>
      <fieldset>
        <legend>Custodians (mailboxes assigned to the scope)</legend>
        {assigned.length === 0 && (
          <p className="muted">{form.scopeUid ? 'No mailbox is assigned to this scope.' : 'Choose a scope first.'}</p>
        )}
        {assigned.map((a) => (
          <label key={a.mailboxUid} className="inline">
            <input
              type="checkbox"
              checked={form.custodians.includes(a.mailboxUid)}
              onChange={(e) => toggle(a.mailboxUid, e.target.checked)}
            />{' '}
            {addressOf(a.mailboxUid)}
            {a.hasEscrowWrap ? '' : ' (no escrow wrap yet: its encrypted mail cannot be read)'}
          </label>
        ))}
      </fieldset>
      <label>
        From <input type="date" required value={form.from} onChange={(e) => setForm({ ...form, from: e.target.value })} />
      </label>
      <label>
        To <input type="date" required value={form.to} onChange={(e) => setForm({ ...form, to: e.target.value })} />
      </label>
      <span>
        <button type="submit">Open matter</button>
      </span>
    </CardForm>
  );
}

/** Matters of the scopes the caller holds: custodians, period, open or closed (closing is final). */
export default function Matters() {
  const [scopes, setScopes] = useState<Scope[]>([]);
  const [version, setVersion] = useState(0);
  useEffect(() => {
    void api<Scope[]>('/api/escrow/scopes?limit=1000').then(setScopes, () => undefined);
  }, []);
  return (
    <>
      <NewMatter scopes={scopes} created={() => setVersion((v) => v + 1)} />
      <RecordTable<Matter>
        label="Matters"
        path="/api/escrow/matters?sort=-createdAt"
        version={version}
        empty="No matter in the scopes you hold."
        columns={[
          { label: 'Matter', cell: (m) => m.name },
          { label: 'Scope', cell: (m) => scopes.find((s) => s.uid === m.scopeUid)?.name ?? m.scopeUid },
          { label: 'Custodians', cell: (m) => m.custodians.length },
          { label: 'Period', cell: (m) => `${at(m.from)} – ${at(m.to)}` },
          { label: 'State', cell: (m) => (m.state === 'open' ? 'Open' : 'Closed') },
        ]}
        actions={(m, run) =>
          m.state === 'open' && (
            <button
              type="button"
              className="secondary"
              onClick={() =>
                confirm(`Close ${m.name}? Closing is final: its requests and exports end.`) &&
                void run(
                  () => api(`/api/escrow/matters/${m.uid}/close`, { method: 'POST', label: `Close the matter ${m.name}` }),
                  `${m.name} closed.`,
                )
              }
            >
              Close
            </button>
          )
        }
      />
    </>
  );
}
