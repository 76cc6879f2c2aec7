// The vault's unlock methods (Spec: Key vault): each listed with when it was made; the password and
// the recovery codes replaced, passkeys added (WebAuthn PRF, where the browser has it) and removed.
// Each change is proven with a current secret and sends expectedMasterKeyGeneration.
import { useEffect, useState } from 'react';
import { at } from '../../shared/RecordTable.js';
import { prfAvailable } from '../../crypto/passkey.js';
import { loadVaultOps, type VaultView } from '../../crypto/use-vault.js';
import { useNewPassword } from './NewPassword.js';
import { useSecretFields } from './SecretFields.js';
import { useVaultChange } from './use-change.js';

type Wrap = VaultView['wraps'][number];

const NAMES: Record<Wrap['method'], string> = {
  password: 'Encryption password',
  'recovery codes': 'Recovery codes (eight, any one unlocks)',
  passkey: 'Passkey',
  escrow: 'Escrow (your organisation’s key escrow; set by the escrow holders)',
};

interface Props {
  vault: VaultView;
  address: string;
  reload(): Promise<unknown>;
  onCodes(codes: string[]): void;
}

function ChangePassword({ vault, reload }: Props) {
  const s = useSecretFields(vault);
  const pw = useNewPassword();
  const change = useVaultChange(reload);
  const [done, setDone] = useState(false);
  return (
    <form
      className="stack"
      aria-label="Change the encryption password"
      onSubmit={async (e) => {
        e.preventDefault();
        if (pw.problem) return;
        const ok = await change.run(async (tick) => (await loadVaultOps()).changePassword(vault, s.secret(), pw.password, tick));
        if (!ok) return;
        s.clear();
        pw.clear();
        setDone(true);
        await reload();
      }}
    >
      {s.fields}
      {pw.fields}
      {pw.problem && pw.password && <p className="muted">{pw.problem}</p>}
      <span>
        <button type="submit" disabled={change.busy || Boolean(pw.problem)}>
          Change the password
        </button>
      </span>
      {done && <p role="status">The encryption password was changed.</p>}
      {change.status}
    </form>
  );
}

function NewCodes({ vault, reload, onCodes }: Props) {
  const s = useSecretFields(vault);
  const change = useVaultChange(reload);
  return (
    <form
      className="stack"
      aria-label="Make new recovery codes"
      onSubmit={async (e) => {
        e.preventDefault();
        const made = await change.run(async (tick) => (await loadVaultOps()).newRecoveryCodes(vault, s.secret(), tick));
        if (!made) return;
        s.clear();
        await reload();
        onCodes(made.recoveryCodes);
      }}
    >
      <p className="muted">New codes replace all the old ones.</p>
      {s.fields}
      <span>
        <button type="submit" disabled={change.busy}>
          Make new recovery codes
        </button>
      </span>
      {change.status}
    </form>
  );
}

function AddPasskey({ vault, address, reload }: Props) {
  const s = useSecretFields(vault);
  const [label, setLabel] = useState('');
  const [done, setDone] = useState(false);
  const change = useVaultChange(reload);
  return (
    <form
      className="stack"
      aria-label="Add a passkey"
      onSubmit={async (e) => {
        e.preventDefault();
        const ok = await change.run(async (tick) => (await loadVaultOps()).addPasskey(vault, address, s.secret(), label.trim(), tick));
        if (!ok) return;
        s.clear();
        setLabel('');
        setDone(true);
        await reload();
      }}
    >
      <label>
        Name of the passkey{' '}
        <input type="text" maxLength={60} value={label} onChange={(e) => setLabel(e.target.value)} placeholder="Laptop" />
      </label>
      {s.fields}
      <span>
        <button type="submit" disabled={change.busy}>
          Add a passkey
        </button>
      </span>
      {done && <p role="status">The passkey was added: it unlocks your keys from now on.</p>}
      {change.status}
    </form>
  );
}

export function Methods(props: Props) {
  const { vault, reload } = props;
  const remove = useVaultChange(reload);
  const [passkeys, setPasskeys] = useState(false);
  useEffect(() => void prfAvailable().then(setPasskeys), []);
  const unlockers = vault.wraps.filter((w) => w.method !== 'escrow').length;
  return (
    <>
      <table>
        <caption>Unlock methods</caption>
        <thead>
          <tr>
            <th scope="col">Method</th>
            <th scope="col">Added</th>
            <th scope="col">
              <span className="visually-hidden">Actions</span>
            </th>
          </tr>
        </thead>
        <tbody>
          {vault.wraps.map((w) => (
            <tr key={w.id}>
              <td>{w.method === 'passkey' && w.label ? `${NAMES.passkey}: ${w.label}` : NAMES[w.method]}</td>
              <td>{at(w.createdAt)}</td>
              <td>
                {w.method === 'passkey' && (
                  <button
                    type="button"
                    className="secondary"
                    disabled={remove.busy || unlockers < 2}
                    onClick={() =>
                      confirm(`Remove the passkey${w.label ? ` ${w.label}` : ''}? It will no longer unlock your keys.`) &&
                      void remove.run(async () => (await loadVaultOps()).removeWrap(vault, w.id)).then((ok) => ok && reload())
                    }
                  >
                    Remove{w.label ? ` ${w.label}` : ' passkey'}
                  </button>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      {remove.status}
      <details>
        <summary>Change the encryption password</summary>
        <ChangePassword {...props} />
      </details>
      <details>
        <summary>Make new recovery codes</summary>
        <NewCodes {...props} />
      </details>
      {passkeys ? (
        <details>
          <summary>Add a passkey</summary>
          <AddPasskey {...props} />
        </details>
      ) : (
        <p className="muted">This browser cannot unlock keys with a passkey (it lacks the WebAuthn PRF extension).</p>
      )}
    </>
  );
}
