import { useState } from 'react';
import { Section } from '../shared/Section.js';
import { create, remove, update, useRecords, type Rec } from '../shared/records.js';
import { DeleteLink } from '../shared/DeleteLink.js';

interface Note extends Rec {
  title: string;
  body: string;
}

/** Notes: a list, and one open to write in (saved with the button). */
export function Notes({ mailboxUid }: { mailboxUid: string }) {
  const notes = useRecords<Note>(`/api/mail/notes?mailboxUid=${encodeURIComponent(mailboxUid)}&sort=-updatedAt&limit=1000`);
  const [open, setOpen] = useState<Note | null>(null);
  const [form, setForm] = useState({ title: '', body: '' });
  const save = async () => {
    const ok = await notes.run(() => (open ? update('notes', open, form) : create('notes', { ...form, mailboxUid })));
    if (ok) {
      setOpen(null);
      setForm({ title: '', body: '' });
    }
  };
  return (
    <div className="pim-columns">
      <Section id="notes" title="Notes" error={notes.error}>
        <ul className="plain" aria-label="Notes">
          {notes.rows?.map((n) => (
            <li key={n.uid}>
              <button
                type="button"
                className="link"
                onClick={() => {
                  setOpen(n);
                  setForm({ title: n.title, body: n.body });
                }}
              >
                {n.title || '(untitled)'}
              </button>{' '}
              <DeleteLink what={`note ${n.title}`} onClick={() => void notes.run(() => remove('notes', n))} />
            </li>
          ))}
        </ul>
      </Section>
      <form
        className="stack"
        aria-label={open ? `Note ${open.title}` : 'New note'}
        onSubmit={(e) => {
          e.preventDefault();
          void save();
        }}
      >
        <label>
          Title <input type="text" value={form.title} onChange={(e) => setForm({ ...form, title: e.target.value })} />
        </label>
        <label>
          Text <textarea rows={12} value={form.body} onChange={(e) => setForm({ ...form, body: e.target.value })} />
        </label>
        <span>
          <button type="submit">Save note</button>{' '}
          {open && (
            <button
              type="button"
              className="secondary"
              onClick={() => {
                setOpen(null);
                setForm({ title: '', body: '' });
              }}
            >
              New note
            </button>
          )}
        </span>
      </form>
    </div>
  );
}
