// The fields that prove the user holds the keys: the encryption password, one recovery code, or a
// passkey (only when the vault has one). The unlock form and the changes of unlock methods both ask
// this way; each names the choices in its own words.
import { useId, useState } from 'react';
import type { VaultView } from './use-vault.js';
import type { Secret } from './vault-ops.js';

export interface SecretWords {
  legend: string;
  /** How each choice is named beside its radio button. */
  choices: Record<Secret['kind'], string>;
  /** The label of the text field for a password and for a recovery code. */
  field: { password: string; recovery: string };
}

export function useSecretFields(vault: VaultView, words: SecretWords, opts: { required?: boolean; onEnter?: () => void } = {}) {
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
    <>
      <fieldset className="inline-choices">
        <legend>{words.legend}</legend>
        {kinds.map((k) => (
          <label key={k} className="inline">
            <input type="radio" name={`${id}-kind`} checked={kind === k} onChange={() => (setKind(k), setValue(''))} /> {words.choices[k]}
          </label>
        ))}
      </fieldset>
      {kind !== 'passkey' && (
        <label>
          {words.field[kind]}{' '}
          <input
            type={kind === 'password' ? 'password' : 'text'}
            autoComplete={kind === 'password' ? 'current-password' : 'off'}
            spellCheck={false}
            required={opts.required ?? true}
            value={value}
            onChange={(e) => setValue(e.target.value)}
            onKeyDown={(e) => opts.onEnter && e.key === 'Enter' && (e.preventDefault(), opts.onEnter())}
          />
        </label>
      )}
    </>
  );
  return { kind, fields, secret, clear: () => setValue('') };
}
