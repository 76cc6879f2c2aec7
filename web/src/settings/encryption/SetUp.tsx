// Creating the key vault, or replacing every key (rekey): P-256 signing and encryption keys made in
// this browser, the encryption certificate issued in the same request, an encryption password and
// eight recovery codes; a signing certificate is asked for at once.
import { useState } from 'react';
import { loadVaultOps, type VaultView } from '../../crypto/use-vault.js';
import { useNewPassword } from './NewPassword.js';
import { useVaultChange } from './use-change.js';

export function SetUp({
  vault,
  address,
  reload,
  onCodes,
}: {
  vault: VaultView;
  address: string;
  reload(): Promise<unknown>;
  onCodes(codes: string[]): void;
}) {
  const pw = useNewPassword(vault.enrolled ? 'Encryption password for the new keys' : 'Encryption password');
  const [confirmRekey, setConfirmRekey] = useState('');
  const change = useVaultChange(reload);
  const rekey = vault.enrolled;
  const blocked = pw.problem ?? (rekey && confirmRekey !== 'REPLACE' ? 'Type REPLACE to confirm.' : null);
  const submit = async () => {
    const made = await change.run(async (tick) => (await loadVaultOps()).enrol(vault, address, pw.password, tick));
    if (!made) return;
    pw.clear();
    setConfirmRekey('');
    await reload();
    onCodes(made.recoveryCodes);
  };
  return (
    <form
      className="stack"
      aria-label={rekey ? 'Replace the keys' : 'Set up encryption'}
      onSubmit={(e) => {
        e.preventDefault();
        if (!blocked) void submit();
      }}
    >
      {rekey ? (
        <p className="notice">
          New keys replace the old ones, for example when a device was lost. Messages encrypted to your old key cannot be opened afterwards;
          passkeys must be added again.
        </p>
      ) : (
        <p>
          Your keys are made in this browser and stored on the server only sealed with a key that your password, recovery codes or passkeys
          unlock. The server never sees them, nor the content of encrypted mail.
        </p>
      )}
      {pw.fields}
      {rekey && (
        <label>
          Type REPLACE to replace your keys <input type="text" value={confirmRekey} onChange={(e) => setConfirmRekey(e.target.value)} />
        </label>
      )}
      {blocked && (pw.password || confirmRekey) && <p className="muted">{blocked}</p>}
      <span>
        <button type="submit" disabled={change.busy || Boolean(blocked)}>
          {rekey ? 'Replace the keys' : 'Create my keys'}
        </button>
      </span>
      {change.status}
    </form>
  );
}
