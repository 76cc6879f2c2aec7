import { useState } from 'react';
import { api } from '../shared/api.js';
import { Section } from '../shared/Section.js';
import { create, remove, useRecords, type Rec } from '../shared/records.js';

export interface MailboxRec extends Rec {
  address: string;
  blockedSenders: string[];
  safeSenders: string[];
  receiptSettings: Record<'internal' | 'federated' | 'external', 'always' | 'never' | 'ask'>;
  usedBytes?: number;
  quotaBytes?: number;
}

const lines = (text: string) => [
  ...new Set(
    text
      .split(/[\n,;]+/)
      .map((x) => x.trim().toLowerCase())
      .filter(Boolean),
  ),
];

/** Blocked and safe senders (addresses or @domains, one a line) and who gets read receipts. */
export function Senders({ box, onSaved }: { box: MailboxRec; onSaved(b: MailboxRec): void }) {
  const [blocked, setBlocked] = useState(box.blockedSenders.join('\n'));
  const [safe, setSafe] = useState(box.safeSenders.join('\n'));
  const [receipts, setReceipts] = useState(box.receiptSettings);
  const [error, setError] = useState<unknown>(null);
  const [saved, setSaved] = useState(false);
  const save = () => {
    setError(null);
    const body = { blockedSenders: lines(blocked), safeSenders: lines(safe), receiptSettings: receipts, version: box.version };
    void api<MailboxRec>(`/api/mail/mailboxes/${encodeURIComponent(box.uid)}`, { method: 'PUT', body }).then(
      (b) => (onSaved(b), setSaved(true)),
      setError,
    );
  };
  const kinds = [
    ['internal', 'People on this server'],
    ['federated', 'People on federated servers'],
    ['external', 'Everyone else'],
  ] as const;
  return (
    <Section
      id="senders"
      title="Senders and receipts"
      intro="Blocked senders go to Junk; safe senders are never junk and their images load. One address or @domain a line."
      error={error}
    >
      <form
        className="stack"
        aria-label="Senders and receipts"
        onSubmit={(e) => {
          e.preventDefault();
          save();
        }}
      >
        <label>
          Blocked senders <textarea rows={4} value={blocked} onChange={(e) => setBlocked(e.target.value)} />
        </label>
        <label>
          Safe senders <textarea rows={4} value={safe} onChange={(e) => setSafe(e.target.value)} />
        </label>
        <fieldset>
          <legend>Read receipts asked for by…</legend>
          {kinds.map(([k, label]) => (
            <label key={k} className="inline receipt">
              {label}{' '}
              <select value={receipts[k]} onChange={(e) => setReceipts({ ...receipts, [k]: e.target.value as 'always' })}>
                <option value="ask">ask me</option>
                <option value="always">always send</option>
                <option value="never">never send</option>
              </select>
            </label>
          ))}
        </fieldset>
        <span>
          <button type="submit">Save senders and receipts</button> <span role="status">{saved ? 'Saved.' : ''}</span>
        </span>
      </form>
    </Section>
  );
}

interface Override extends Rec {
  sender: string;
  classification: 'focused' | 'other';
}

/** Senders always sorted into Focused or Other. */
export function FocusedOverrides({ mailboxUid }: { mailboxUid: string }) {
  const { rows, error, run } = useRecords<Override>(
    `/api/mail/focused-inbox-overrides?mailboxUid=${encodeURIComponent(mailboxUid)}&limit=1000`,
  );
  const [sender, setSender] = useState('');
  const [classification, setClassification] = useState<'focused' | 'other'>('focused');
  return (
    <Section
      id="focused"
      title="Focused Inbox"
      intro="Mail from these senders (or @domains) always goes to Focused or to Other."
      error={error}
    >
      <ul className="plain">
        {rows?.map((o) => (
          <li key={o.uid}>
            {o.sender} → {o.classification === 'focused' ? 'Focused' : 'Other'}{' '}
            <button
              type="button"
              className="link"
              aria-label={`Remove ${o.sender}`}
              onClick={() => void run(() => remove('focused-inbox-overrides', o))}
            >
              Remove
            </button>
          </li>
        ))}
      </ul>
      <form
        className="inline-form"
        aria-label="New Focused Inbox rule"
        onSubmit={(e) => {
          e.preventDefault();
          void run(() => create('focused-inbox-overrides', { mailboxUid, sender, classification })).then((ok) => ok && setSender(''));
        }}
      >
        <label>
          Sender{' '}
          <input
            type="text"
            required
            placeholder="name@example.org or @example.org"
            value={sender}
            onChange={(e) => setSender(e.target.value)}
          />
        </label>{' '}
        <select aria-label="Always to" value={classification} onChange={(e) => setClassification(e.target.value as 'focused')}>
          <option value="focused">always Focused</option>
          <option value="other">always Other</option>
        </select>{' '}
        <button type="submit">Add</button>
      </form>
    </Section>
  );
}
