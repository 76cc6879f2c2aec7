import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { CardForm } from '../shared/CardForm.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { readSession } from '../shared/session.js';
import { at, RecordTable } from '../shared/RecordTable.js';
import type { Run } from '../shared/outcome.js';
import type { AccessRequest, Decisions, Matter } from './types.js';

const STATES: Record<AccessRequest['state'], string> = {
  pending: 'Waiting for approvals',
  approved: 'Approved',
  withdrawn: 'Withdrawn',
  closed: 'Closed (matter closed)',
};

/** How long an approval still counts, in words. */
function freshness(expiresAt: string): string {
  const h = (Date.parse(expiresAt) - Date.now()) / 3_600_000;
  return h <= 0
    ? 'expired: approve again to renew'
    : h < 1
      ? `counts for ${Math.round(h * 60)} more min`
      : `counts for ${Math.floor(h)} more h`;
}

/** Each holder's standing on a request: approvals with their age against the TTL, declines, and progress toward M. */
function DecisionsOf({ uid, version }: { uid: string; version: number }) {
  const [d, setD] = useState<Decisions | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<Decisions>(`/api/escrow/access-requests/${uid}/decisions`).then(setD, setError);
  }, [uid, version]);
  if (!d) return <ErrorBox error={error} />;
  return (
    <div className="decisions">
      <progress max={d.approvalsRequired} value={Math.min(d.valid, d.approvalsRequired)} aria-label="Approvals that count" /> {d.valid} of{' '}
      {d.approvalsRequired} approvals count (each for {d.approvalTtlHours} h)
      <ul>
        {d.approvals.map((a) => (
          <li key={a.holder}>
            {a.holder} approved {at(a.approvedAt)} —{' '}
            {a.counts === 'not-a-holder' ? 'no longer a holder: does not count' : freshness(a.expiresAt)}
          </li>
        ))}
        {d.declines.map((x) => (
          <li key={x.holder}>
            {x.holder} declined {at(x.declinedAt)}
            {x.reason ? `: ${x.reason}` : ''}
          </li>
        ))}
      </ul>
    </div>
  );
}

/** Approve, decline (with a reason), withdraw (the requester), or go to the investigation once approved. */
function Actions({ r, run, me }: { r: AccessRequest; run: Run; me: string }) {
  const live = r.state === 'pending' || r.state === 'approved';
  const path = `/api/escrow/access-requests/${r.uid}`;
  return (
    <>
      {live && (
        <button
          type="button"
          onClick={() =>
            void run(() => api(`${path}/approve`, { method: 'POST', label: `Approve the access request “${r.reason}”` }), 'Approved.')
          }
        >
          Approve
        </button>
      )}{' '}
      {live && (
        <button
          type="button"
          className="secondary"
          onClick={() => {
            const reason = prompt('Why do you decline? (kept in the escrow audit log)');
            if (reason !== null)
              void run(
                () => api(`${path}/decline`, { method: 'POST', body: { reason }, label: `Decline the access request “${r.reason}”` }),
                'Declined.',
              );
          }}
        >
          Decline
        </button>
      )}{' '}
      {live && r.requester === me && (
        <button
          type="button"
          className="secondary"
          onClick={() =>
            confirm('Withdraw the request?') &&
            void run(() => api(`${path}/withdraw`, { method: 'POST', label: `Withdraw the access request “${r.reason}”` }), 'Withdrawn.')
          }
        >
          Withdraw
        </button>
      )}{' '}
      {r.state === 'approved' && <a href={`#investigate?request=${r.uid}`}>Investigate</a>}
    </>
  );
}

/** A new request for a matter's escrow material, with its reason (the requester's own approval counts). */
function NewRequest({ matters, created }: { matters: Matter[]; created(): void }) {
  const [matterUid, setMatterUid] = useState('');
  const [reason, setReason] = useState('');
  const send = async () => {
    await api('/api/escrow/access-requests', { method: 'POST', body: { matterUid, reason }, label: 'Ask for access to a matter' });
    setReason('');
    created();
  };
  return (
    <CardForm title="New access request" submit={send}>
      <label>
        Matter{' '}
        <select required value={matterUid} onChange={(e) => setMatterUid(e.target.value)}>
          <option value="">Choose an open matter</option>
          {matters
            .filter((m) => m.state === 'open')
            .map((m) => (
              <option key={m.uid} value={m.uid}>
                {m.name}
              </option>
            ))}
        </select>
      </label>
      <label>
        Reason (kept in the escrow audit log) <textarea required rows={2} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <span>
        <button type="submit">Ask for access</button>
      </span>
    </CardForm>
  );
}

/** Access requests of the scopes the caller holds: where each stands, and the caller's decision. */
export function Requests() {
  const [matters, setMatters] = useState<Matter[]>([]);
  const [me, setMe] = useState('');
  const [version, setVersion] = useState(0);
  useEffect(() => {
    void api<Matter[]>('/api/escrow/matters?limit=1000&sort=-createdAt').then(setMatters, () => undefined);
    void readSession().then(
      (s) => setMe(s.uid),
      () => undefined,
    );
  }, []);
  const matterName = (uid: string) => matters.find((m) => m.uid === uid)?.name ?? uid;
  return (
    <>
      <NewRequest matters={matters} created={() => setVersion((v) => v + 1)} />
      <RecordTable<AccessRequest>
        label="Access requests"
        path="/api/escrow/access-requests?sort=-createdAt"
        version={version}
        empty="No access request in the scopes you hold."
        columns={[
          { label: 'Matter', cell: (r) => matterName(r.matterUid) },
          { label: 'Reason', cell: (r) => r.reason },
          { label: 'Asked by', cell: (r) => `${r.requester}, ${at(r.createdAt)}` },
          { label: 'State', cell: (r) => STATES[r.state] },
          { label: 'Decisions', cell: (r) => <DecisionsOf uid={r.uid} version={version} /> },
        ]}
        actions={(r, run) => <Actions r={r} me={me} run={(step, done) => run(step, done).finally(() => setVersion((v) => v + 1))} />}
      />
    </>
  );
}
