// Unlocking a mailbox's key vault, once per page (Spec: Key vault): the encryption password, one of
// the recovery codes, or a passkey. The keys go to the page's keyring (keyring.ts); nothing of the
// secret leaves the browser.
import { useId, useState } from 'react';
import { describeError } from '../shared/api.js';
import { explainCrypto } from './explain.js';
import { expectedMs } from './derive.js';
import type { Secret } from './vault-ops.js';
import { loadVaultOps, useVault, type VaultView } from './use-vault.js';

type Method = Secret['kind'];

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

const hasPasskey = (v: VaultView) => v.wraps.some((w) => w.method === 'passkey');

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
  if (quiet && (error || !vault?.enrolled)) return null;
  if (error)
    return (
      <p className="error" role="alert">
        {describeError(error)}
      </p>
    );
  if (!vault) return <p className="muted">Reading your encryption keys…</p>;
  if (!vault.enrolled)
    return (
      <p className="notice">
        {why} You have no encryption keys yet: <a href="/settings#encryption">set them up in Settings</a>.
      </p>
    );
  return <UnlockForm vault={vault} address={address} why={why} nested={nested} />;
}

function UnlockForm({ vault, address, why, nested }: { vault: VaultView; address: string; why: string; nested: boolean }) {
  const [method, setMethod] = useState<Method>('password');
  const [secret, setSecret] = useState('');
  const [elapsed, setElapsed] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const id = useId();
  const submit = async () => {
    setBusy(true);
    setError(null);
    try {
      const s: Secret =
        method === 'password'
          ? { kind: 'password', password: secret }
          : method === 'recovery'
            ? { kind: 'recovery', code: secret }
            : { kind: 'passkey' };
      await (await loadVaultOps()).unlock(vault, address, s, method === 'password' ? setElapsed : undefined);
      setSecret('');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
      setElapsed(null);
    }
  };
  const label = `Unlock the encryption keys of ${address}`;
  const content = (
    <>
      <p>{why}</p>
      <fieldset className="inline-choices">
        <legend>Unlock with</legend>
        {(['password', 'recovery', ...(hasPasskey(vault) ? ['passkey'] : [])] as Method[]).map((m) => (
          <label key={m} className="inline">
            <input type="radio" name={`${id}-method`} checked={method === m} onChange={() => (setMethod(m), setSecret(''))} />{' '}
            {m === 'password' ? 'Password' : m === 'recovery' ? 'Recovery code' : 'Passkey'}
          </label>
        ))}
      </fieldset>
      {method !== 'passkey' && (
        <label>
          {method === 'password' ? 'Encryption password' : 'The recovery code'}{' '}
          <input
            type={method === 'password' ? 'password' : 'text'}
            autoComplete={method === 'password' ? 'current-password' : 'off'}
            spellCheck={false}
            required={!nested}
            value={secret}
            onChange={(e) => setSecret(e.target.value)}
            onKeyDown={(e) => nested && e.key === 'Enter' && (e.preventDefault(), void submit())}
          />
        </label>
      )}
      <span>
        <button type={nested ? 'button' : 'submit'} disabled={busy} onClick={nested ? () => void submit() : undefined}>
          {method === 'passkey' ? 'Unlock with a passkey' : 'Unlock'}
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
