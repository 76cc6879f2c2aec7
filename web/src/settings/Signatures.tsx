import { useState } from 'react';
import { Section } from '../shared/Section.js';
import { create, remove, update, useRecords, type Rec } from '../shared/records.js';
import { DeleteLink } from '../shared/DeleteLink.js';

interface Signature extends Rec {
  name: string;
  text: string;
  isDefault: boolean;
}

const BLANK = { name: '', text: '', isDefault: false };

/** Signatures compose puts under a message: the default one goes in by itself. */
export function Signatures({ mailboxUid }: { mailboxUid: string }) {
  const { rows, error, run } = useRecords<Signature>(`/api/mail/mail-signatures?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=100`);
  const [form, setForm] = useState(BLANK);
  const [editing, setEditing] = useState<Signature | null>(null);
  const save = async () => {
    const done = await run(() => (editing ? update('mail-signatures', editing, form) : create('mail-signatures', { ...form, mailboxUid })));
    if (done) {
      setForm(BLANK);
      setEditing(null);
    }
  };
  return (
    <Section
      id="signatures"
      title="Signatures"
      intro="The default signature is added to every new message, reply and forward."
      error={error}
    >
      <ul className="plain">
        {rows?.map((s) => (
          <li key={s.uid}>
            <strong>{s.name}</strong> {s.isDefault && <span className="muted">(default)</span>}{' '}
            <button
              type="button"
              className="link"
              onClick={() => {
                setEditing(s);
                setForm({ name: s.name, text: s.text, isDefault: s.isDefault });
              }}
            >
              Edit
            </button>{' '}
            <DeleteLink what={`signature ${s.name}`} onClick={() => void run(() => remove('mail-signatures', s))} />
          </li>
        ))}
      </ul>
      <form
        className="stack"
        aria-label={editing ? `Edit signature ${editing.name}` : 'New signature'}
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label>
          Name <input type="text" required value={form.name} onChange={(e) => setForm({ ...form, name: e.target.value })} />
        </label>
        <label>
          Text <textarea rows={4} value={form.text} onChange={(e) => setForm({ ...form, text: e.target.value })} />
        </label>
        <label className="inline">
          <input type="checkbox" checked={form.isDefault} onChange={(e) => setForm({ ...form, isDefault: e.target.checked })} /> Use by
          default
        </label>
        <span>
          <button type="submit">{editing ? 'Save signature' : 'Add signature'}</button>
        </span>
      </form>
    </Section>
  );
}
