import { useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ListInput } from '../shared/ListInput.js';
import { RecordTable, RemoveButton } from '../shared/RecordTable.js';

interface DistributionList {
  uid: string;
  version: number;
  address: string;
  name: string;
  members: string[];
  membersOnly: boolean;
  allowExternalMembers: boolean;
}

type Form = Omit<DistributionList, 'uid' | 'version'>;
const BLANK: Form = { address: '', name: '', members: [], membersOnly: false, allowExternalMembers: true };

/** A list made or changed: its address, name, members (a member may be another list: lists nest) and who may write to it. */
function ListForm({ editing, onDone }: { editing: DistributionList | null; onDone(): void }) {
  const [form, setForm] = useState<Form>(editing ?? BLANK);
  const save = async () => {
    const { address, ...rest } = form;
    if (editing)
      await api(`/api/mail/distribution-lists/${editing.uid}`, {
        method: 'PUT',
        body: { ...rest, version: editing.version },
        label: `Change the list ${editing.address}`,
      });
    else await api('/api/mail/distribution-lists', { method: 'POST', body: form, label: `Create the list ${address}` });
    setForm(BLANK);
    onDone();
  };
  return (
    <CardForm title={editing ? `Change ${editing.address}` : 'New distribution list'} submit={save}>
      {!editing && (
        <label>
          Address <input type="email" required value={form.address} onChange={(e) => setForm({ ...form, address: e.target.value })} />
        </label>
      )}
      <label>
        Name <input type="text" value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
      </label>
      <label>
        Members (addresses, comma-separated; a list's address nests it)
        <ListInput
          label="Members (addresses, comma-separated; a list's address nests it)"
          values={form.members}
          onChange={(members) => setForm({ ...form, members })}
        />
      </label>
      <label className="inline">
        <input type="checkbox" checked={form.membersOnly} onChange={(e) => setForm({ ...form, membersOnly: e.target.checked })} /> Only
        members may write to it
      </label>
      <label className="inline">
        <input
          type="checkbox"
          checked={form.allowExternalMembers}
          onChange={(e) => setForm({ ...form, allowExternalMembers: e.target.checked })}
        />{' '}
        Members may be outside this server
      </label>
      <span>
        <button type="submit">{editing ? 'Save list' : 'Create list'}</button>{' '}
        {editing && (
          <button type="button" className="secondary" onClick={onDone}>
            Close
          </button>
        )}
      </span>
    </CardForm>
  );
}

/** Distribution lists: members, nesting, who may write. */
export default function Lists() {
  const [version, setVersion] = useState(0);
  const [editing, setEditing] = useState<DistributionList | null>(null);
  const done = () => {
    setEditing(null);
    setVersion((v) => v + 1);
  };
  return (
    <>
      <ListForm key={editing?.uid ?? 'new'} editing={editing} onDone={done} />
      <RecordTable<DistributionList>
        label="Distribution lists"
        path="/api/mail/distribution-lists?sort=address"
        version={version}
        empty="No distribution list yet."
        columns={[
          { label: 'Address', cell: (l) => l.address },
          { label: 'Name', cell: (l) => l.name || '—' },
          { label: 'Members', cell: (l) => `${l.members.length}: ${l.members.slice(0, 5).join(', ')}${l.members.length > 5 ? '…' : ''}` },
          { label: 'Who may write', cell: (l) => (l.membersOnly ? 'Members only' : 'Anyone') },
        ]}
        actions={(l, run) => (
          <>
            <button type="button" className="secondary" onClick={() => setEditing(l)}>
              Change
            </button>{' '}
            <RemoveButton
              path={`/api/mail/distribution-lists/${l.uid}`}
              version={l.version}
              text="Delete"
              question={`Delete the list ${l.address}?`}
              label={`Delete the list ${l.address}`}
              done={`${l.address} deleted.`}
              run={run}
            />
          </>
        )}
      />
    </>
  );
}
