import { useState } from 'react';
import { Section } from '../shared/Section.js';
import { create, remove, update, useRecords, type Rec } from '../shared/records.js';
import { DeleteLink } from '../shared/DeleteLink.js';
import { ImportExport } from './ImportExport.js';

interface Contact extends Rec {
  fn: string;
  emails: Array<{ type: string; value: string }>;
  phones: Array<{ type: string; value: string }>;
  org: string;
  note: string;
}
interface ContactList extends Rec {
  name: string;
  members: Array<{ contactUid: string } | { email: string }>;
}

interface Form {
  fn: string;
  emails: string;
  phones: string;
  org: string;
  note: string;
}
const BLANK: Form = { fn: '', emails: '', phones: '', org: '', note: '' };
const split = (s: string) =>
  s
    .split(/[,;\n]+/)
    .map((x) => x.trim())
    .filter(Boolean);
/** Typed values from the field: one already there keeps its type (home, work…), a new one is other. */
const typed = (text: string, before: Array<{ type: string; value: string }> = []) =>
  split(text).map((value) => before.find((x) => x.value === value) ?? { type: 'other', value });
const bodyOf = (f: Form, before?: Contact) => ({
  fn: f.fn,
  emails: typed(f.emails, before?.emails),
  phones: typed(f.phones, before?.phones),
  org: f.org,
  note: f.note,
});

/** Named lists of contacts or addresses: made, filled from the address book, deleted. */
function ContactLists({ mailboxUid, contacts }: { mailboxUid: string; contacts: Contact[] }) {
  const lists = useRecords<ContactList>(`/api/mail/contact-lists?mailboxUid=${encodeURIComponent(mailboxUid)}&sort=name&limit=1000`);
  const [listName, setListName] = useState('');
  const nameOf = (m: ContactList['members'][number]) =>
    'email' in m ? m.email : (contacts.find((c) => c.uid === m.contactUid)?.fn ?? 'a contact');
  return (
    <Section id="contact-lists" title="Contact lists" error={lists.error}>
      <ul className="plain">
        {lists.rows?.map((l) => (
          <li key={l.uid}>
            <strong>{l.name}</strong> <span className="muted">{l.members.map(nameOf).join(', ') || 'no members'}</span>{' '}
            <select
              aria-label={`Add to ${l.name}`}
              value=""
              onChange={(e) =>
                e.target.value &&
                void lists.run(() => update('contact-lists', l, { members: [...l.members, { contactUid: e.target.value }] }))
              }
            >
              <option value="">Add a contact…</option>
              {contacts.map((c) => (
                <option key={c.uid} value={c.uid}>
                  {c.fn}
                </option>
              ))}
            </select>{' '}
            <DeleteLink what={`list ${l.name}`} onClick={() => void lists.run(() => remove('contact-lists', l))} />
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        aria-label="New contact list"
        onSubmit={(e) => {
          e.preventDefault();
          void lists.run(() => create('contact-lists', { mailboxUid, name: listName })).then((ok) => ok && setListName(''));
        }}
      >
        <label>
          List name <input type="text" required value={listName} onChange={(e) => setListName(e.target.value)} />
        </label>{' '}
        <button type="submit">Add list</button>
      </form>
    </Section>
  );
}

/** The address book: contacts (found by name or address as you type), each changed or deleted; and contact lists. */
export function Contacts({ mailboxUid }: { mailboxUid: string }) {
  const box = encodeURIComponent(mailboxUid);
  const contacts = useRecords<Contact>(`/api/mail/contacts?mailboxUid=${box}&sort=fn&limit=1000`);
  const [filter, setFilter] = useState('');
  const [form, setForm] = useState<Form>(BLANK);
  const [editing, setEditing] = useState<Contact | null>(null);
  const q = filter.trim().toLowerCase();
  const shown = (contacts.rows ?? []).filter((c) => !q || c.fn.toLowerCase().includes(q) || c.emails.some((e) => e.value.includes(q)));
  const save = async () => {
    const ok = await contacts.run(() =>
      editing ? update('contacts', editing, bodyOf(form, editing)) : create('contacts', { ...bodyOf(form), mailboxUid }),
    );
    if (ok) {
      setForm(BLANK);
      setEditing(null);
    }
  };
  const field = (key: keyof Form, label: string) => (
    <label>
      {label} <input type="text" required={key === 'fn'} value={form[key]} onChange={(e) => setForm({ ...form, [key]: e.target.value })} />
    </label>
  );
  return (
    <div className="pim-columns">
      <Section id="contacts" title="Contacts" error={contacts.error}>
        <ImportExport
          what="contacts"
          exportPath={`/api/mail/contacts/export?mailboxUid=${box}`}
          importPath={`/api/mail/contacts/import?mailboxUid=${box}`}
          type="text/vcard"
          accept=".vcf,text/vcard"
          imported={() => void contacts.reload()}
        />
        <input
          type="search"
          aria-label="Find a contact"
          placeholder="Find a contact"
          value={filter}
          onChange={(e) => setFilter(e.target.value)}
        />
        <ul className="plain" aria-label="Contacts">
          {shown.map((c) => (
            <li key={c.uid}>
              <strong>{c.fn}</strong> <span className="muted">{c.emails.map((e) => e.value).join(', ')}</span>{' '}
              <button
                type="button"
                className="link"
                onClick={() => {
                  setEditing(c);
                  setForm({
                    fn: c.fn,
                    emails: c.emails.map((e) => e.value).join(', '),
                    phones: c.phones.map((p) => p.value).join(', '),
                    org: c.org,
                    note: c.note,
                  });
                }}
              >
                Change
              </button>{' '}
              <DeleteLink what={`${c.fn}`} onClick={() => void contacts.run(() => remove('contacts', c))} />
            </li>
          ))}
        </ul>
        <form
          className="stack"
          aria-label={editing ? `Change ${editing.fn}` : 'New contact'}
          onSubmit={(e) => {
            e.preventDefault();
            void save();
          }}
        >
          {field('fn', 'Name')}
          {field('emails', 'Addresses (comma-separated)')}
          {field('phones', 'Phones (comma-separated)')}
          {field('org', 'Organisation')}
          {field('note', 'Note')}
          <span>
            <button type="submit">{editing ? 'Save contact' : 'Add contact'}</button>
          </span>
        </form>
      </Section>
      <ContactLists mailboxUid={mailboxUid} contacts={contacts.rows ?? []} />
    </div>
  );
}
