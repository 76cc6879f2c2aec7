import { useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { MailboxReasonForm, useMailboxes, type AdminMailbox } from '../shared/mailbox-pick.js';
import { at, RecordTable } from '../shared/RecordTable.js';

/** An impersonation session (lib/lifecycle/models.ts). */
interface Session {
  uid: string;
  version: number;
  mailboxUid: string;
  reason: string;
  state: 'pending' | 'active' | 'declined' | 'ended' | 'expired';
  /** The administrator who asked: the only one who can read through the session. */
  requestedBy: string;
  decidedBy: string | null;
  decidedAt: string | null;
  /** Pending: until when the owner can approve; active: when read access ends. */
  expiresAt: string | null;
  /** Audited reads made through the session. */
  reads: number;
  createdAt: string;
}

const STATES: Record<Session['state'], string> = {
  pending: 'Waiting for the owner',
  active: 'Approved: read-only access',
  declined: 'Declined by the owner',
  ended: 'Ended',
  expired: 'Expired',
};

/** What expiresAt means in the session's state. */
function until(s: Session): string {
  if (s.state === 'pending') return `Owner can approve until ${at(s.expiresAt)}`;
  if (s.state === 'active') return `Access ends ${at(s.expiresAt)}`;
  return '—';
}

/** Who decided and when, after the state. */
const decided = (s: Session) => (s.decidedBy ? ` (${s.decidedBy}, ${at(s.decidedAt)})` : '');

/**
 * Audited impersonation: an administrator asks to view a mailbox, giving a reason; nothing is visible
 * until the owner approves, and then read-only, for a limited time, each read audited and counted.
 * This view asks, follows and ends sessions; it does not read mail.
 */
export default function Impersonation() {
  const { boxes, error, addressOf } = useMailboxes();
  const [version, setVersion] = useState(0);
  const ask = async (box: AdminMailbox, reason: string) => {
    await api('/api/admin/impersonation-sessions', {
      method: 'POST',
      body: { mailboxUid: box.uid, reason },
      label: `Ask the owner of ${box.address} for impersonation`,
    });
    setVersion((v) => v + 1);
    return true;
  };
  return (
    <>
      <p>
        The mailbox owner must approve a request before anything of the mailbox is visible; they see who asked, why, and how many reads were
        made, and can end the session at any time. Access is read-only, for a limited time, and only for the administrator who asked; every
        read is audited.
      </p>
      <ErrorBox error={error} />
      <section aria-labelledby="impersonation-new-title">
        <h3 id="impersonation-new-title">Ask for access</h3>
        <MailboxReasonForm name="New impersonation request" boxes={boxes} action="Ask the owner" send={ask} />
      </section>
      <section aria-labelledby="impersonation-list-title">
        <h3 id="impersonation-list-title">Sessions</h3>
        <p className="toolbar">
          <button type="button" className="secondary" onClick={() => setVersion((v) => v + 1)}>
            Refresh sessions
          </button>
        </p>
        <RecordTable<Session>
          label="Impersonation sessions"
          path="/api/admin/impersonation-sessions?sort=-createdAt"
          version={version}
          empty="No impersonation session yet."
          columns={[
            { label: 'Mailbox', cell: (s) => addressOf(s.mailboxUid) },
            { label: 'Reason', cell: (s) => s.reason },
            { label: 'Asked by', cell: (s) => s.requestedBy },
            { label: 'Asked', cell: (s) => at(s.createdAt) },
            { label: 'State', cell: (s) => `${STATES[s.state]}${decided(s)}` },
            { label: 'Expires', cell: until },
            { label: 'Reads', cell: (s) => s.reads },
          ]}
          actions={(s, run) =>
            (s.state === 'pending' || s.state === 'active') && (
              <button
                type="button"
                className="secondary"
                onClick={() =>
                  confirm(
                    `End the impersonation of ${addressOf(s.mailboxUid)}? It cannot be opened again; a new request would be needed.`,
                  ) &&
                  void run(
                    () =>
                      api(`/api/admin/impersonation-sessions/${encodeURIComponent(s.uid)}/end`, {
                        method: 'POST',
                        label: `End the impersonation of ${addressOf(s.mailboxUid)}`,
                      }),
                    `The impersonation of ${addressOf(s.mailboxUid)} ended.`,
                  )
                }
              >
                End
              </button>
            )
          }
        />
      </section>
    </>
  );
}
