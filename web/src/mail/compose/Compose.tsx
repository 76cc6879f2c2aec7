import '../../styles/compose.css';
import { useMemo, useState } from 'react';
import { describeError } from '../../shared/api.js';
import type { Folder, Mailbox, Message } from '../types.js';
import { parseRecipients } from './addresses.js';
import { AddressField } from './AddressField.js';
import { Attachments } from './Attachments.js';
import { Editor } from './Editor.js';
import type { ComposeStart } from './open.js';
import type { SaveState } from './saver.js';
import type { SendFailure, SendMode } from './send.js';
import { suggester } from './suggest.js';
import { useDraft, type DraftState } from './use-draft.js';
import { EncryptionPanel } from './EncryptionPanel.js';
import { Unlock } from '../../crypto/Unlock.js';

const TITLES: Record<ComposeStart['kind'], string> = {
  new: 'New message',
  reply: 'Reply',
  replyAll: 'Reply all',
  forward: 'Forward',
  forwardAttachment: 'Forward as attachment',
  draft: 'Draft',
};
const SAVE_STATES: Record<SaveState, string> = {
  unsaved: 'Not saved yet',
  saving: 'Saving…',
  saved: 'Draft saved',
  failed: 'Not saved',
  copied: 'Saved as a new draft: this draft was changed in another window meanwhile, and both are in Drafts',
};

/** Why the last send was refused: what happened, the server's words, each recipient's reason. */
function FailureNotice({ failure }: { failure: SendFailure }) {
  return (
    <div className="error" role="alert">
      <strong>{failure.headline}</strong> {failure.detail}
      {failure.reasons.length > 0 && (
        <ul aria-label="Recipients not accepted">
          {failure.reasons.map((r) => (
            <li key={r.path}>
              {r.path}: {r.message}
            </li>
          ))}
        </ul>
      )}
    </div>
  );
}

/** Send now (or in the background), send later, close (kept in Drafts), discard; and whether the draft is saved. */
function SendBar({ d }: { d: DraftState }) {
  const [later, setLater] = useState('');
  const [background, setBackground] = useState(false);
  const now: SendMode = background ? { kind: 'background' } : { kind: 'now' };
  return (
    <div className="toolbar compose-actions">
      <button type="button" onClick={() => void d.send(now)}>
        Send
      </button>
      <label className="inline">
        <input type="checkbox" checked={background} onChange={(e) => setBackground(e.target.checked)} /> Send in the background
      </label>
      <span className="send-later">
        <label htmlFor="compose-later">Send later</label>{' '}
        <input id="compose-later" type="datetime-local" value={later} onChange={(e) => setLater(e.target.value)} />{' '}
        <button
          type="button"
          className="secondary"
          disabled={!later}
          onClick={() => void d.send({ kind: 'scheduled', at: new Date(later) })}
        >
          Schedule
        </button>
      </span>
      <button type="button" className="secondary" onClick={() => void d.close()}>
        Close
      </button>
      <button type="button" className="secondary" onClick={() => void d.discard()}>
        Discard
      </button>
      <span role="status" className="muted">
        {d.saveState === 'failed' ? `${SAVE_STATES.failed}: ${describeError(d.error)}` : SAVE_STATES[d.saveState]}
      </span>
    </div>
  );
}

/** The compose view: recipients with suggestions, subject, body, attachments (also dropped on it); saved as the user writes. */
export function Compose({
  box,
  folders,
  start,
  failure,
  onClose,
  onSend,
}: {
  box: Mailbox;
  folders: Folder[];
  start: ComposeStart;
  failure: SendFailure | null;
  onClose(): void;
  onSend(draft: Message, mode: SendMode): void;
}) {
  const d = useDraft(start, box, { onSend, onClose });
  const sentUid = folders.find((f) => f.role === 'sent')?.uid ?? null;
  const suggest = useMemo(() => suggester(box.uid, sentUid), [box.uid, sentUid]);
  const errorBox = d.error !== null && d.saveState !== 'failed' && (
    <div className="error" role="alert">
      {describeError(d.error)}
    </div>
  );
  const { fields, draft } = d;
  if (d.secure.needsUnlock)
    return <Unlock mailboxUid={box.uid} address={box.address} why="This draft is encrypted: unlock your keys to go on writing it." />;
  if (!fields) return <div aria-busy="true">{errorBox || <p className="muted">Opening…</p>}</div>;
  const address = (label: string, key: 'to' | 'cc' | 'bcc') => (
    <AddressField
      label={label}
      value={fields[key]}
      onChange={(v) => d.update({ [key]: v })}
      suggest={suggest}
      invalid={parseRecipients(fields[key]).invalid}
    />
  );
  const froms = [box.address, ...box.aliases];
  return (
    <form
      className="compose"
      aria-label={TITLES[start.kind]}
      onSubmit={(e) => e.preventDefault()}
      onDragOver={(e) => e.dataTransfer.types.includes('Files') && e.preventDefault()}
      onDrop={(e) => {
        if (!e.dataTransfer.types.includes('Files')) return;
        e.preventDefault();
        void d.attach(Array.from(e.dataTransfer.files));
      }}
    >
      <h2>{TITLES[start.kind]}</h2>
      {failure && <FailureNotice failure={failure} />}
      {draft?.sendAt && (
        <p className="notice">
          Scheduled for {new Date(draft.sendAt).toLocaleString()}. Saving a change cancels it; send again to schedule it.
        </p>
      )}
      {errorBox}
      {froms.length > 1 && (
        <div className="field">
          <label htmlFor="compose-from">From</label>
          <select id="compose-from" value={fields.from} onChange={(e) => d.update({ from: e.target.value })}>
            {froms.map((a) => (
              <option key={a}>{a}</option>
            ))}
          </select>
        </div>
      )}
      {address('To', 'to')}
      {address('Cc', 'cc')}
      {address('Bcc', 'bcc')}
      <EncryptionPanel d={d} box={box} />
      <div className="field">
        <label htmlFor="compose-subject">Subject</label>
        <input id="compose-subject" type="text" value={fields.subject} onChange={(e) => d.update({ subject: e.target.value })} />
      </div>
      <label className="inline">
        <input type="checkbox" checked={fields.html !== null} onChange={(e) => d.setRich(e.target.checked)} /> Rich text
      </label>
      <Editor text={fields.text} html={fields.html} seed={d.seed} onChange={d.onBody} />
      <Attachments files={d.attachments} uploads={d.uploads} onAdd={(f) => void d.attach(f)} onRemove={d.remove} />
      <SendBar d={d} />
    </form>
  );
}
