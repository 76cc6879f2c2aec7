import { useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ListInput } from '../shared/ListInput.js';
import { bytes, RecordTable } from '../shared/RecordTable.js';
import type { AdminMailbox } from '../shared/mailbox-pick.js';

const MB = 1024 * 1024;

/** Usage against the quota as a bar with its numbers in text. */
function Usage({ m }: { m: AdminMailbox }) {
  if (!m.quotaBytes) return <>{bytes(m.usedBytes)} (no quota)</>;
  const pct = Math.min(100, Math.round((m.usedBytes / m.quotaBytes) * 100));
  return (
    <span className="usage">
      <progress max={m.quotaBytes} value={Math.min(m.usedBytes, m.quotaBytes)} aria-label={`${m.address}: ${pct}% of quota used`} />{' '}
      {bytes(m.usedBytes)} of {bytes(m.quotaBytes)}
    </span>
  );
}

/** Creates a mailbox: address, name, owners (sign-in uids), quota and aliases (none: the mailbox policy's defaults). */
function NewMailbox({ created }: { created(): void }) {
  const [form, setForm] = useState({ address: '', name: '', owners: [] as string[], quotaMb: '', aliases: [] as string[] });
  const save = async () => {
    const body = {
      address: form.address,
      name: form.name,
      owners: form.owners,
      aliases: form.aliases,
      ...(form.quotaMb ? { quotaBytes: Math.round(Number(form.quotaMb) * MB) } : {}),
    };
    await api('/api/mail/mailboxes', { method: 'POST', body, label: `Create the mailbox ${form.address}` });
    setForm({ address: '', name: '', owners: [], quotaMb: '', aliases: [] });
    created();
  };
  return (
    <CardForm title="New mailbox" submit={save}>
      <label>
        Address <input type="email" required value={form.address} onChange={(e) => setForm({ ...form, address: e.target.value })} />
      </label>
      <label>
        Display name <input type="text" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
      </label>
      <label>
        Owners (sign-in user names, comma-separated)
        <ListInput
          label="Owners (sign-in user names, comma-separated)"
          values={form.owners}
          onChange={(owners) => setForm({ ...form, owners })}
        />
      </label>
      <label>
        Quota in MB (empty: the mailbox policy's default)
        <input type="number" min={0} step="any" value={form.quotaMb} onChange={(e) => setForm({ ...form, quotaMb: e.target.value })} />
      </label>
      <label>
        Aliases (comma-separated)
        <ListInput label="Aliases (comma-separated)" values={form.aliases} onChange={(aliases) => setForm({ ...form, aliases })} />
      </label>
      <span>
        <button type="submit">Create mailbox</button>
      </span>
    </CardForm>
  );
}

/** Changes a mailbox's owners, aliases and quota (what administration may change; the rest is its owners'). */
function EditMailbox({ m, onDone }: { m: AdminMailbox; onDone(): void }) {
  const [owners, setOwners] = useState(m.owners);
  const [aliases, setAliases] = useState(m.aliases);
  const [quotaMb, setQuotaMb] = useState(String(m.quotaBytes / MB));
  const save = async () => {
    if (owners.join() !== m.owners.join())
      await api(`/api/mail/mailboxes/${m.uid}/owners`, { method: 'PUT', body: { owners }, label: `Change the owners of ${m.address}` });
    // ?scope=admin: administration changes its fields of the record (aliases, quota), nothing of the owner's.
    await api(`/api/mail/mailboxes/${m.uid}?scope=admin`, {
      method: 'PUT',
      body: { aliases, quotaBytes: Math.round(Number(quotaMb) * MB), version: m.version },
      label: `Change the aliases and quota of ${m.address}`,
    });
    onDone();
  };
  return (
    <CardForm title={`Change ${m.address}`} submit={save}>
      <label>
        Owners (sign-in user names, comma-separated)
        <ListInput label="Owners (sign-in user names, comma-separated)" values={owners} onChange={setOwners} />
      </label>
      <label>
        Aliases (comma-separated)
        <ListInput label="Aliases (comma-separated)" values={aliases} onChange={setAliases} />
      </label>
      <label>
        Quota in MB (0: none)
        <input type="number" min={0} step="any" required value={quotaMb} onChange={(e) => setQuotaMb(e.target.value)} />
      </label>
      <span>
        <button type="submit">Save mailbox</button>{' '}
        <button type="button" className="secondary" onClick={onDone}>
          Close
        </button>
      </span>
    </CardForm>
  );
}

/** Every mailbox with its addresses, owners and usage; created here, aliases and quota changed here. */
export default function Mailboxes() {
  const [version, setVersion] = useState(0);
  const [editing, setEditing] = useState<AdminMailbox | null>(null);
  const again = () => setVersion((v) => v + 1);
  return (
    <>
      <p className="muted">
        Administration sees and changes addresses, owners and quota only. Blocked and safe senders and receipt settings are the owners' (in
        their Settings); the defaults for new mailboxes are in <a href="#policies">Policies</a>.
      </p>
      {editing ? (
        <EditMailbox
          key={editing.uid}
          m={editing}
          onDone={() => {
            setEditing(null);
            again();
          }}
        />
      ) : (
        <NewMailbox created={again} />
      )}
      <RecordTable<AdminMailbox>
        label="Mailboxes"
        path="/api/mail/mailboxes?scope=admin&sort=address"
        version={version}
        empty="No mailbox yet."
        columns={[
          { label: 'Address', cell: (m) => m.address },
          { label: 'Aliases', cell: (m) => m.aliases.join(', ') || '—' },
          { label: 'Owners', cell: (m) => m.owners.join(', ') },
          { label: 'Storage', cell: (m) => <Usage m={m} /> },
        ]}
        actions={(m) => (
          <button type="button" className="secondary" onClick={() => setEditing(m)}>
            Change
          </button>
        )}
      />
    </>
  );
}
