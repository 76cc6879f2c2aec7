import { useEffect, useState } from 'react';
import { api } from '../shared/api.js';
import { ErrorBox } from '../shared/ErrorBox.js';
import { saveFile } from '../shared/files.js';
import { Outcome, useAnswer } from '../shared/outcome.js';
import { at, Table } from '../shared/RecordTable.js';
import type { Run } from '../shared/outcome.js';

type State =
  'requested' | 'challenge-pending' | 'challenge-answered' | 'validating' | 'issued' | 'installed' | 'superseded' | 'rejected' | 'failed';

/** A signing-certificate request (lib/keys/enrollment.ts), as the API answers it. */
interface Enrolment {
  uid: string;
  version: number;
  mailboxUid: string;
  address: string;
  backend: 'manual' | 'rfc8823';
  state: State;
  /** PKCS#10 (PEM) signed with the vault signing key: what the certificate authority is given. */
  csr: string;
  masterKeyGeneration: number;
  certificate?: string | null;
  fingerprint?: string | null;
  reason?: string | null;
  completedBy?: string | null;
  createdAt: string;
  updatedAt: string;
}

/** GET /api/system/signing-enrollment: the backend in force and the one configured. */
interface BackendStatus {
  backend: 'manual' | 'rfc8823';
  configured: 'manual' | 'rfc8823' | 'auto';
}

const STATES: Record<State, string> = {
  requested: 'Waiting',
  'challenge-pending': 'Challenge sent (ACME)',
  'challenge-answered': 'Challenge answered (ACME)',
  validating: 'Being validated (ACME)',
  issued: 'Issued, not installed yet',
  installed: 'Installed',
  superseded: 'Superseded',
  rejected: 'Rejected',
  failed: 'Failed',
};

/** States an administrator may complete by hand (adminComplete); only a request still waiting can be rejected (TRANSITIONS). */
const COMPLETABLE: State[] = ['requested', 'challenge-pending', 'challenge-answered', 'validating'];

const BACKENDS = { manual: 'by hand (an administrator completes each request)', rfc8823: 'ACME for S/MIME (RFC 8823)' };

/** The backend in force and the one configured (auto picks per address: by hand for local test domains, ACME otherwise). */
function Backend() {
  const [status, setStatus] = useState<BackendStatus | null>(null);
  const [error, setError] = useState<unknown>(null);
  useEffect(() => {
    api<BackendStatus>('/api/system/signing-enrollment').then(setStatus, setError);
  }, []);
  if (error) return <ErrorBox error={error} />;
  if (!status) return <p className="muted">Loading…</p>;
  return (
    <p>
      Backend in force: {BACKENDS[status.backend]}.{' '}
      {status.configured === 'auto'
        ? 'Configured as auto: requests for local test domains (.test, .example, .localhost…) are completed by hand, the others through ACME.'
        : `Configured as ${status.configured}.`}
    </p>
  );
}

/** Offers the request's CSR as a file, for the certificate authority. */
const downloadCsr = (rec: Enrolment) => saveFile(`${rec.address.replace(/[^\w.@-]/g, '_')}.csr`, [rec.csr], 'application/pkcs10');

/** Completes a request with the certificate the authority issued for its CSR (PEM, pasted). */
function CompleteForm({ rec, run }: { rec: Enrolment; run: Run }) {
  const [pem, setPem] = useState('');
  return (
    <form
      className="stack"
      aria-label={`Complete the request of ${rec.address}`}
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          () =>
            api(`/api/admin/signing-enrollments/${encodeURIComponent(rec.uid)}/complete`, {
              method: 'POST',
              body: { certificate: pem.trim() },
              label: `Complete the signing-certificate request of ${rec.address}`,
            }),
          `The certificate of ${rec.address} was accepted.`,
        ).then((ok) => ok && setPem(''));
      }}
    >
      <label>
        Issued certificate (PEM)
        <textarea
          required
          rows={8}
          minLength={100}
          maxLength={16384}
          spellCheck={false}
          value={pem}
          placeholder="-----BEGIN CERTIFICATE-----"
          onChange={(e) => setPem(e.target.value)}
        />
      </label>
      <p className="muted">
        It must be for the key of this request and name {rec.address}. If the vault was rekeyed meanwhile, the request becomes superseded
        instead.
      </p>
      <button type="submit">Complete</button>
    </form>
  );
}

/** Rejects a request that is still waiting, with the reason the owner is told. */
function RejectForm({ rec, run }: { rec: Enrolment; run: Run }) {
  const [reason, setReason] = useState('');
  return (
    <form
      className="toolbar"
      aria-label={`Reject the request of ${rec.address}`}
      onSubmit={(e) => {
        e.preventDefault();
        void run(
          () =>
            api(`/api/admin/signing-enrollments/${encodeURIComponent(rec.uid)}/reject`, {
              method: 'POST',
              body: { reason: reason.trim() },
              label: `Reject the signing-certificate request of ${rec.address}`,
            }),
          `The request of ${rec.address} was rejected.`,
        );
      }}
    >
      <label>
        Reason for the rejection <input type="text" required maxLength={500} value={reason} onChange={(e) => setReason(e.target.value)} />
      </label>
      <button type="submit" className="secondary">
        Reject
      </button>
    </form>
  );
}

/** One request: its CSR and what became of it, and while it is open the ways to complete or reject it. */
function RequestCard({ rec, run, close }: { rec: Enrolment; run: Run; close(): void }) {
  return (
    <section aria-labelledby="enrolment-title" className="card">
      <h3 id="enrolment-title">Signing certificate for {rec.address}</h3>
      <p>
        {STATES[rec.state]}
        {rec.reason ? `: ${rec.reason}` : ''}. Asked {at(rec.createdAt)}, key generation {rec.masterKeyGeneration}
        {rec.completedBy ? `; handled by ${rec.completedBy}` : ''}.
      </p>
      {rec.fingerprint && (
        <p>
          Certificate fingerprint: <code>{rec.fingerprint}</code>
        </p>
      )}
      <details>
        <summary>Certificate signing request (CSR)</summary>
        <pre>{rec.csr}</pre>
      </details>
      <p className="toolbar">
        <button type="button" className="secondary" onClick={() => downloadCsr(rec)}>
          Download the CSR
        </button>
        <button type="button" className="secondary" onClick={close}>
          Close
        </button>
      </p>
      {COMPLETABLE.includes(rec.state) && <CompleteForm rec={rec} run={run} />}
      {rec.state === 'requested' && <RejectForm rec={rec} run={run} />}
    </section>
  );
}

/** Signing-certificate requests: those still open first in view, each completed by hand with the issued certificate or rejected. */
export default function Enrolments() {
  const { data, error, told, run } = useAnswer<Enrolment[]>('/api/admin/signing-enrollments');
  const [all, setAll] = useState(false);
  const [open, setOpen] = useState<string | null>(null);
  const rows = (data ?? []).filter((r) => all || COMPLETABLE.includes(r.state));
  const chosen = data?.find((r) => r.uid === open);
  return (
    <>
      <Backend />
      <p className="toolbar">
        <label>
          <input type="checkbox" checked={all} onChange={(e) => setAll(e.target.checked)} /> Show closed requests too
        </label>
      </p>
      <Outcome error={error} told={told} />
      <Table<Enrolment>
        label="Signing-certificate requests"
        rows={data && rows}
        empty={all ? 'No signing-certificate request yet.' : 'No request is waiting.'}
        columns={[
          { label: 'Mailbox', cell: (r) => r.address },
          { label: 'Backend', cell: (r) => (r.backend === 'manual' ? 'By hand' : 'ACME') },
          {
            label: 'State',
            cell: (r) => (
              <>
                {STATES[r.state]}
                {r.reason && <div className="muted">{r.reason}</div>}
              </>
            ),
          },
          { label: 'Asked', cell: (r) => at(r.createdAt) },
          { label: 'Last change', cell: (r) => at(r.updatedAt) },
        ]}
        actions={(r) => (
          <button type="button" className="secondary" onClick={() => setOpen(r.uid)}>
            {COMPLETABLE.includes(r.state) ? 'Complete or reject' : 'Show'}
          </button>
        )}
      />
      {chosen && <RequestCard key={chosen.uid} rec={chosen} run={run} close={() => setOpen(null)} />}
    </>
  );
}
