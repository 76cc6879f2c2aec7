import { useEffect, useState } from 'react';
import { api, when } from '../shared/api.js';
import type { Message } from './types.js';

// Beside the open message: its labels (put on and taken off; a new one made on the spot) and the
// other messages of its conversation (same threadId), oldest first.

interface Label {
  uid: string;
  name: string;
}

/** The mailbox's labels, each a checkbox for the open message; a new label is made and put on. */
export function LabelPicker({ message, onChange }: { message: Message; onChange(labels: string[]): void }) {
  const [labels, setLabels] = useState<Label[]>([]);
  const [name, setName] = useState('');
  useEffect(() => {
    void api<Label[]>(`/api/mail/labels?mailboxUid=${encodeURIComponent(message.mailboxUid)}&limit=1000&sort=name`).then(setLabels, () =>
      setLabels([]),
    );
  }, [message.mailboxUid]);
  const on = new Set(message.labels);
  const set = (label: string, yes: boolean) => onChange(yes ? [...message.labels, label] : message.labels.filter((l) => l !== label));
  const add = async () => {
    const label = name.trim();
    if (!label) return;
    if (!labels.some((l) => l.name === label)) {
      const made = await api<Label>('/api/mail/labels', { method: 'POST', body: { mailboxUid: message.mailboxUid, name: label } });
      setLabels((all) => [...all, made]);
    }
    setName('');
    if (!on.has(label)) set(label, true);
  };
  return (
    <details className="labels">
      <summary>Labels{message.labels.length ? `: ${message.labels.join(', ')}` : ''}</summary>
      <fieldset>
        <legend className="visually-hidden">Labels of this message</legend>
        {labels.map((l) => (
          <label key={l.uid} className="inline">
            <input type="checkbox" checked={on.has(l.name)} onChange={(e) => set(l.name, e.target.checked)} /> {l.name}
          </label>
        ))}
        <span className="inline">
          <input type="text" aria-label="New label" placeholder="New label" value={name} onChange={(e) => setName(e.target.value)} />
          <button type="button" className="secondary" onClick={() => void add()}>
            Add
          </button>
        </span>
      </fieldset>
    </details>
  );
}

/** The other messages of the open message's conversation; one opens in its place. */
export function Conversation({ message, onOpen }: { message: Message; onOpen(m: Message): void }) {
  const [thread, setThread] = useState<Message[]>([]);
  useEffect(() => {
    const q = new URLSearchParams({ mailboxUid: message.mailboxUid, threadId: message.threadId, sort: 'date', limit: '100' });
    void api<Message[]>(`/api/mail/messages?${q}`).then(setThread, () => setThread([]));
  }, [message.mailboxUid, message.threadId]);
  if (thread.length < 2) return null;
  return (
    <details className="conversation">
      <summary>Conversation ({thread.length} messages)</summary>
      <ol>
        {thread.map((m) => (
          <li key={m.uid}>
            {m.uid === message.uid ? (
              <strong>
                {m.from?.name || m.fromAddress} · {when(m.date)} (this message)
              </strong>
            ) : (
              <button type="button" className="link" onClick={() => onOpen(m)}>
                {m.from?.name || m.fromAddress} · {when(m.date)} · {m.subject || '(no subject)'}
              </button>
            )}
          </li>
        ))}
      </ol>
    </details>
  );
}
