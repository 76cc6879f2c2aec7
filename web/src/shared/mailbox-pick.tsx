import { useEffect, useMemo, useState } from 'react';
import { api } from './api.js';
import { ErrorBox } from './ErrorBox.js';

/** A mailbox as administration sees it (?scope=admin): addresses, owners and quota only. */
export interface AdminMailbox {
  uid: string;
  version: number;
  address: string;
  aliases: string[];
  owners: string[];
  quotaBytes: number;
  usedBytes: number;
}

/** The deployment's mailboxes (first 1000, by address) to pick from, and the address of a mailbox uid. */
export function useMailboxes() {
  const [boxes, setBoxes] = useState<AdminMailbox[] | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<AdminMailbox[]>('/api/mail/mailboxes?scope=admin&limit=1000').then(
      (r) => setBoxes([...r].sort((a, b) => a.address.localeCompare(b.address))),
      setError,
    );
  }, []);
  const byUid = useMemo(() => new Map((boxes ?? []).map((b) => [b.uid, b.address])), [boxes]);
  /** The mailbox's address, else its uid (an erased mailbox, or one beyond the first 1000). */
  const addressOf = (uid: string) => byUid.get(uid) ?? uid;
  return { boxes, error, addressOf };
}

/** A mailbox and the reason for what is asked of it; `send` answers false when the user changed their mind (the form is kept). */
export function MailboxReasonForm({
  name,
  boxes,
  action,
  send,
}: {
  name: string;
  boxes: AdminMailbox[] | null;
  action: string;
  send(box: AdminMailbox, reason: string): Promise<boolean>;
}) {
  const [uid, setUid] = useState('');
  const [reason, setReason] = useState('');
  const [error, setError] = useState<unknown>(null);
  const submit = async () => {
    const box = boxes?.find((b) => b.uid === uid);
    if (!box) return;
    setError(null);
    try {
      if (!(await send(box, reason.trim()))) return;
      setUid('');
      setReason('');
    } catch (e) {
      setError(e);
    }
  };
  return (
    <form
      className="stack"
      aria-label={name}
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      <label>
        Mailbox{' '}
        <select required disabled={!boxes} value={uid} onChange={(e) => setUid(e.target.value)}>
          <option value="">{boxes ? 'Choose a mailbox' : 'Loading mailboxes…'}</option>
          {boxes?.map((b) => (
            <option key={b.uid} value={b.uid}>
              {b.address}
            </option>
          ))}
        </select>
      </label>
      <label>
        Reason (kept in the audit log){' '}
        <textarea required rows={2} maxLength={2000} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <ErrorBox error={error} />
      <button type="submit">{action}</button>
    </form>
  );
}
