// The signing certificate (Spec: Signing-certificate enrolment): installed (who it names, until when)
// or where its request stands — by hand (an administrator completes it) or rfc8823 (the CA mails a
// challenge that the service answers; 10 to 30 minutes). Without one, mail is encrypted but not signed.
import { useCallback, useEffect, useState } from 'react';
import { api } from '../../shared/api.js';
import { ErrorBox } from '../../shared/ErrorBox.js';
import { at } from '../../shared/RecordTable.js';
import { useUnlocked } from '../../crypto/keyring.js';
import { loadVaultOps, type VaultView } from '../../crypto/use-vault.js';

interface Request {
  uid: string;
  mailboxUid: string;
  backend: 'manual' | 'rfc8823';
  state: string;
  reason?: string | null;
  createdAt: string;
  updatedAt?: string;
}

interface Status {
  backend: 'manual' | 'rfc8823';
  requests: Request[];
}

const STATES: Record<string, (r: Request) => string> = {
  requested: (r) =>
    r.backend === 'manual'
      ? 'Asked for: an administrator issues the certificate by hand.'
      : 'Asked for: the certificate authority is being contacted.',
  'challenge-pending': () => 'The certificate authority mailed a challenge to this address; the service answers it.',
  'challenge-answered': () => 'The challenge was answered; waiting for the certificate authority.',
  validating: () => 'The certificate authority is checking the answer.',
  issued: () => 'Issued: being installed.',
  installed: () => 'Installed.',
  superseded: () => 'Superseded (the keys changed, or a newer request was made).',
  rejected: (r) => `Refused${r.reason ? `: ${r.reason}` : ''}.`,
  failed: (r) => `Failed${r.reason ? `: ${r.reason}` : ''}.`,
};
const OPEN = new Set(['requested', 'challenge-pending', 'challenge-answered', 'validating', 'issued']);

export function Signing({ vault, reload }: { vault: VaultView; reload(): Promise<unknown> }) {
  const [status, setStatus] = useState<Status | null>(null);
  const [error, setError] = useState<unknown>(null);
  const keys = useUnlocked(vault.mailboxUid);
  const read = useCallback(() => api<Status>('/api/system/signing-enrollment').then(setStatus, setError), []);
  useEffect(() => void read(), [read, vault.masterKeyGeneration]);
  const mine = status?.requests.filter((r) => r.mailboxUid === vault.mailboxUid) ?? [];
  const latest = mine.sort((a, b) => b.createdAt.localeCompare(a.createdAt))[0];
  const ask = async () => {
    if (!keys) return;
    setError(null);
    try {
      await (await loadVaultOps()).requestSigning(vault, keys);
      await Promise.all([read(), reload()]);
    } catch (e) {
      setError(e);
    }
  };
  return (
    <section aria-labelledby="signing-title">
      <h3 id="signing-title">Signing certificate</h3>
      <ErrorBox error={error} />
      {vault.signingCertificate ? (
        <p>Your messages are signed: recipients see that they come from you and were not changed.</p>
      ) : (
        <p className="notice">No signing certificate yet: your messages are encrypted but not signed.</p>
      )}
      {latest && (
        <p role="status">
          Latest request ({at(latest.createdAt)}, {latest.backend === 'manual' ? 'issued by hand' : 'automatic, RFC 8823'}):{' '}
          {(STATES[latest.state] ?? (() => latest.state))(latest)}
        </p>
      )}
      {!vault.signingCertificate && !(latest && OPEN.has(latest.state)) && (
        <p>
          {keys ? (
            <button type="button" onClick={() => void ask()}>
              Ask for a signing certificate
            </button>
          ) : (
            <span className="muted">Unlock your keys above to ask for a signing certificate.</span>
          )}
        </p>
      )}
    </section>
  );
}
