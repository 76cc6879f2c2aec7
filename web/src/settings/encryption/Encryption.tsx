// Settings → Encryption (Spec: Key vault; Signing-certificate enrolment): set up the keys, unlock
// them for the browser session, the unlock methods, the signing certificate, when to lock again, and rekey.
import { useEffect, useState } from 'react';
import { unpem } from '../../../../lib/keys/client/bytes.js';
import { Section } from '../../shared/Section.js';
import { IDLE_DEFAULT_MINUTES, idleMinutes, lock, setIdleMinutes, sharedKeys, useUnlocked } from '../../crypto/keyring.js';
import { Unlock } from '../../crypto/Unlock.js';
import { useVault, type VaultView } from '../../crypto/use-vault.js';
import { Methods } from './Methods.js';
import { RecoveryCodes } from './RecoveryCodes.js';
import { SetUp } from './SetUp.js';
import { Signing } from './Signing.js';

interface Box {
  uid: string;
  address: string;
}

/** SHA-256 of the certificate's DER, as colon-separated pairs (what another client shows to compare). */
function useFingerprint(pem: string | undefined): string {
  const [fp, setFp] = useState('');
  useEffect(() => {
    if (!pem) return;
    const der = unpem(pem);
    void crypto.subtle
      .digest('SHA-256', der as Uint8Array<ArrayBuffer>)
      .then((d) => setFp([...new Uint8Array(d)].map((b) => b.toString(16).padStart(2, '0').toUpperCase()).join(':')));
  }, [pem]);
  return fp;
}

const LOCK_CHOICES = [5, 15, 30, 60, 240, 0];

function LockAfter() {
  const [minutes, setMinutes] = useState(idleMinutes());
  return (
    <label>
      Lock the keys after{' '}
      <select
        value={minutes}
        onChange={(e) => {
          const m = Number(e.target.value);
          setMinutes(m);
          setIdleMinutes(m);
        }}
      >
        {LOCK_CHOICES.map((m) => (
          <option key={m} value={m}>
            {m === 0
              ? 'only when I sign out or close the last page of the app'
              : `${m} minutes without use${m === IDLE_DEFAULT_MINUTES ? ' (default)' : ''}`}
          </option>
        ))}
      </select>
    </label>
  );
}

function Enrolled({ box, vault, reload, onCodes }: { box: Box; vault: VaultView; reload(): Promise<unknown>; onCodes(c: string[]): void }) {
  const keys = useUnlocked(box.uid);
  const fingerprint = useFingerprint(vault.encryptionCertificate);
  return (
    <>
      <p>
        Your keys are set up (generation {vault.masterKeyGeneration}). Encryption certificate fingerprint (SHA-256):{' '}
        <code className="fingerprint">{fingerprint || '…'}</code>
      </p>
      {keys ? (
        <p role="status">
          {sharedKeys() ? 'Unlocked in this browser session (every page of the app).' : 'Unlocked in this page.'}{' '}
          <button type="button" className="secondary" onClick={() => lock(box.uid)}>
            Lock now
          </button>
        </p>
      ) : (
        <Unlock mailboxUid={box.uid} address={box.address} why="Your keys are locked." />
      )}
      <LockAfter />
      <Methods vault={vault} address={box.address} reload={reload} onCodes={onCodes} />
      <Signing vault={vault} reload={reload} />
      <details>
        <summary>Replace the keys</summary>
        <SetUp vault={vault} address={box.address} reload={reload} onCodes={onCodes} />
      </details>
    </>
  );
}

export function Encryption({ box }: { box: Box }) {
  const { vault, error, reload } = useVault(box.uid);
  const [codes, setCodes] = useState<string[] | null>(null);
  return (
    <Section
      id="encryption"
      title="Encryption"
      intro="End-to-end encryption with S/MIME: messages are encrypted and signed in this browser; the server stores only what it cannot read."
      error={error}
    >
      {codes && <RecoveryCodes address={box.address} codes={codes} onDone={() => setCodes(null)} />}
      {!vault ? (
        <p className="muted">Reading your keys…</p>
      ) : vault.enrolled ? (
        <Enrolled box={box} vault={vault} reload={reload} onCodes={setCodes} />
      ) : (
        <SetUp vault={vault} address={box.address} reload={reload} onCodes={setCodes} />
      )}
    </Section>
  );
}
