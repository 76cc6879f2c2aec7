// "Prove you hold the keys": the current encryption password, a recovery code or a passkey, asked
// before a change of unlock methods (the page keeps no master key to make new wraps with).
import { useId, useState } from 'react';
import type { Secret } from '../../crypto/vault-ops.js';
import type { VaultView } from '../../crypto/use-vault.js';

export function useSecretFields(vault: VaultView) {
  const [kind, setKind] = useState<Secret['kind']>('password');
  const [value, setValue] = useState('');
  const id = useId();
  const kinds: Array<Secret['kind']> = [
    'password',
    'recovery',
    ...(vault.wraps.some((w) => w.method === 'passkey') ? (['passkey'] as const) : []),
  ];
  const secret = (): Secret => (kind === 'password' ? { kind, password: value } : kind === 'recovery' ? { kind, code: value } : { kind });
  const fields = (
    <fieldset>
      <legend>Confirm with your current</legend>
      {kinds.map((k) => (
        <label key={k} className="inline">
          <input type="radio" name={`${id}-kind`} checked={kind === k} onChange={() => (setKind(k), setValue(''))} />{' '}
          {k === 'password' ? 'encryption password' : k === 'recovery' ? 'recovery code' : 'passkey'}
        </label>
      ))}
      {kind !== 'passkey' && (
        <label>
          {kind === 'password' ? 'Current encryption password' : 'Recovery code'}{' '}
          <input
            type={kind === 'password' ? 'password' : 'text'}
            autoComplete={kind === 'password' ? 'current-password' : 'off'}
            required
            value={value}
            onChange={(e) => setValue(e.target.value)}
          />
        </label>
      )}
    </fieldset>
  );
  return { fields, secret, clear: () => setValue('') };
}
