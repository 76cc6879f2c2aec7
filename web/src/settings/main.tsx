// Settings: one mailbox's signatures, filter rules, out-of-office, senders and receipts, Focused
// Inbox, appearance, devices and export; passwords and second factors live at the sign-in service.
import '../styles/svcmail.css';
import '../styles/settings.css';
import { useEffect, useState } from 'react';
import { createRoot } from 'react-dom/client';
import { api } from '../shared/api.js';
import { applyAppearance, readAppearance } from '../shared/appearance.js';
import { Appearance } from './Appearance.js';
import { Devices } from './Devices.js';
import { Encryption } from './encryption/Encryption.js';
import { Exports } from './Exports.js';
import { FilterRules } from './FilterRules.js';
import { OutOfOffice } from './OutOfOffice.js';
import { FocusedOverrides, Senders, type MailboxRec } from './Senders.js';
import { Signatures } from './Signatures.js';
import { startSession } from '../shared/session.js';
import { startKeyring } from '../crypto/keyring.js';
import { ErrorBox } from '../shared/ErrorBox.js';

const SECTIONS = [
  ['signatures', 'Signatures'],
  ['rules', 'Filter rules'],
  ['out-of-office', 'Out of office'],
  ['senders', 'Senders and receipts'],
  ['encryption', 'Encryption'],
  ['focused', 'Focused Inbox'],
  ['appearance', 'Appearance'],
  ['devices', 'Devices'],
  ['data', 'Storage and export'],
] as const;

function MailboxSettings({ box, onSaved }: { box: MailboxRec; onSaved(b: MailboxRec): void }) {
  useEffect(() => {
    void readAppearance(box.uid).then(applyAppearance, () => undefined);
  }, [box.uid]);
  return (
    <>
      <Signatures mailboxUid={box.uid} />
      <FilterRules mailboxUid={box.uid} />
      <OutOfOffice mailboxUid={box.uid} />
      <Senders box={box} onSaved={onSaved} />
      <Encryption box={box} />
      <FocusedOverrides mailboxUid={box.uid} />
      <Appearance mailboxUid={box.uid} />
      <Devices mailboxUid={box.uid} />
      <Exports box={box} />
    </>
  );
}

function Settings() {
  const [boxes, setBoxes] = useState<MailboxRec[] | null>(null);
  const [uid, setUid] = useState('');
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<MailboxRec[]>('/api/mail/mailboxes?limit=100').then((b) => (setBoxes(b), setUid(b[0]?.uid ?? '')), setError);
  }, []);
  if (error !== null) return <ErrorBox error={error} />;
  if (!boxes) return <p className="muted">Loading…</p>;
  const box = boxes.find((b) => b.uid === uid);
  const auth = document.body.dataset.authUrl;
  return (
    <div className="settings">
      <nav aria-label="Settings sections" className="settings-nav">
        {boxes.length > 1 && (
          <select aria-label="Mailbox" value={uid} onChange={(e) => setUid(e.target.value)}>
            {boxes.map((b) => (
              <option key={b.uid} value={b.uid}>
                {b.address}
              </option>
            ))}
          </select>
        )}
        <ul className="plain">
          {SECTIONS.map(([id, label]) => (
            <li key={id}>
              <a href={`#${id}`}>{label}</a>
            </li>
          ))}
          {auth && (
            <li>
              <a href={`${auth}/account`}>Password, second factors and app passwords</a>
            </li>
          )}
        </ul>
      </nav>
      <div className="settings-body">
        {box ? (
          <MailboxSettings key={box.uid} box={box} onSaved={(b) => setBoxes((all) => all!.map((x) => (x.uid === b.uid ? b : x)))} />
        ) : (
          <p className="notice">You have no mailbox yet. An administrator creates one for you.</p>
        )}
      </div>
    </div>
  );
}

createRoot(document.getElementById('app')!).render(<Settings />);

startSession();
startKeyring();
