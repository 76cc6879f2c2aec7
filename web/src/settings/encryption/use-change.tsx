// One change of the vault at a time: busy while it runs, the password derivation's progress, and a
// stale generation (409 api-108: changed in another tab or device) explained with a way out.
import { useState } from 'react';
import { explainCrypto } from '../../crypto/explain.js';
import { DeriveProgress } from '../../crypto/Unlock.js';
import { isStale } from '../../crypto/use-vault.js';
import type { Tick } from '../../crypto/vault-ops.js';

export function useVaultChange(reload: () => Promise<unknown>) {
  const [busy, setBusy] = useState(false);
  const [elapsed, setElapsed] = useState<number | null>(null);
  const [error, setError] = useState<unknown>(null);
  const run = async <T,>(step: (tick: Tick) => Promise<T>): Promise<T | null> => {
    setBusy(true);
    setError(null);
    try {
      return await step(setElapsed);
    } catch (e) {
      setError(e);
      return null;
    } finally {
      setBusy(false);
      setElapsed(null);
    }
  };
  const status = (
    <>
      <DeriveProgress elapsed={elapsed} />
      {isStale(error) ? (
        <div className="error" role="alert">
          Your encryption keys were changed in another tab or on another device meanwhile, so nothing was changed here.{' '}
          <button type="button" className="secondary" onClick={() => void reload().then(() => setError(null))}>
            Reload the keys
          </button>{' '}
          and try again.
        </div>
      ) : (
        error !== null && (
          <p className="error" role="alert">
            {explainCrypto(error)}
          </p>
        )
      )}
    </>
  );
  return { busy, run, status };
}
