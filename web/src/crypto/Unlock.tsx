// Unlocking a mailbox's key vault, once per browser session (Spec: Key vault): the encryption
// password, one of the recovery codes, or a passkey. The keys go to the keyring (keyring.ts), which
// shares them with the session's other pages; nothing of the secret leaves the browser.
import { useState } from 'react';
import { useSecretFields } from './secret-fields.js';
import { describeError } from '../shared/api.js';
import { explainCrypto } from './explain.js';
import { expectedMs } from './derive.js';
import { loadVaultOps, useVault, type VaultView } from './use-vault.js';
import { useKeysSettled } from './keyring.js';

/** A progress bar for the password derivation: against the last run's time on this device, else indeterminate. */
export function DeriveProgress({ elapsed }: { elapsed: number | null }) {
  if (elapsed === null) return null;
  const expected = expectedMs();
  return (
    <p role="status" className="derive-progress">
      <progress
        aria-label="Deriving the key from the password"
        max={expected ?? undefined}
        value={expected ? Math.min(elapsed, expected) : undefined}
      />{' '}
      Deriving the key from the password… {(elapsed / 1000).toFixed(1)} s{expected ? ` of about ${(expected / 1000).toFixed(1)} s` : ''}
    </p>
  );
}

interface Props {
  mailboxUid: string;
  address: string;
  /** What the keys are needed for, said first. */
  why: string;
  /** A prompt where keys would help but are not needed: nothing while the keys are read or when there are none. */
  quiet?: boolean;
  /** Inside another form (compose): a group that submits on its button and on Enter, since forms cannot nest. */
  nested?: boolean;
}

/** The unlock form of one mailbox. */
export function Unlock({ mailboxUid, address, why, quiet = false, nested = false }: Props) {
  const { vault, error } = useVault(mailboxUid);
  // Until the session's keys are known the form would only flash: they may be unlocked already.
  const settled = useKeysSettled();
  if (quiet && (error || !vault?.enrolled || !settled)) return null;
  if (error)
    return (
      <p className="error" role="alert">
        {describeError(error)}
      </p>
    );
  if (!vault || !settled) return <p className="muted">Reading your encryption keys…</p>;
  if (!vault.enrolled)
    return (
      <p className="notice">
        {why} You have no encryption keys yet: <a href="/settings#encryption">set them up in Settings</a>.
      </p>
    );
  return <UnlockForm vault={vault} address={address} why={why} nested={nested} />;
}

const WORDS = {
  legend: 'Unlock with',
  choices: { password: 'Password', recovery: 'Recovery code', passkey: 'Passkey' },
  field: { password: 'Encryption password', recovery: 'The recovery code' },
};

function UnlockForm({ vault, address, why, nested }: { vault: VaultView; address: string; why: string; nested: boolean }) {
  const [elapsed, setElapsed] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      await (await loadVaultOps()).unlock(vault, address, s.secret(), s.kind === 'password' ? setElapsed : undefined);
      s.clear();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
      setElapsed(null);
    }
  };
  const s = useSecretFields(vault, WORDS, { required: !nested, onEnter: nested ? () => void submit() : undefined });
  const label = `Unlock the encryption keys of ${address}`;
  const content = (
    <>
      <p>{why}</p>
      {s.fields}
      <span>
        <button type={nested ? 'button' : 'submit'} disabled={busy} onClick={nested ? () => void submit() : undefined}>
          {s.kind === 'passkey' ? 'Unlock with a passkey' : 'Unlock'}
        </button>
      </span>
      <DeriveProgress elapsed={elapsed} />
      {error !== null && (
        <p className="error" role="alert">
          {explainCrypto(error)}
        </p>
      )}
    </>
  );
  if (nested)
    return (
      <div role="form" className="unlock stack" aria-label={label}>
        {content}
      </div>
    );
  return (
    <form
      className="unlock stack"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        void submit();
      }}
    >
      {content}
    </form>
  );
}
