// The compose view's encryption line (Spec: Encryption policy; Discovered keys): encrypted or not,
// the user's choice, each recipient's state and why, a changed key to accept or reject, and the
// unlock form where the keys are needed.
import { useState } from 'react';
import { describeError } from '../../shared/api.js';
import { Unlock } from '../../crypto/Unlock.js';
import { useVault } from '../../crypto/use-vault.js';
import type { Mailbox } from '../types.js';
import { parseRecipients } from './addresses.js';
import { recipientNote, type Choice, type PlanRecipient } from './use-encryption.js';
import type { DraftState } from './use-draft.js';

const CHOICES: Record<Choice, string> = {
  auto: 'Encrypt when every recipient has a key',
  on: 'Encrypt',
  off: 'Do not encrypt',
};

/** A changed key of a pinned contact: the fingerprints, and accept or keep the old one. */
function Conflict({ r, onResolve }: { r: PlanRecipient; onResolve(r: PlanRecipient, d: 'accept' | 'reject'): Promise<void> }) {
  const [error, setError] = useState<unknown>(null);
  const pin = r.key!.pin!;
  const act = (d: 'accept' | 'reject') => void onResolve(r, d).catch(setError);
  return (
    <div className="error" role="alert">
      The encryption key of {r.address} changed. Pinned: <code>{pin.fingerprint.slice(0, 16)}…</code>, new:{' '}
      <code>{(pin.pendingFingerprint ?? '').slice(0, 16)}…</code>. Make sure they really changed it (ask them another way) before you accept
      it.{' '}
      <button type="button" className="secondary" onClick={() => act('accept')}>
        Accept the new key of {r.address}
      </button>{' '}
      <button type="button" className="secondary" onClick={() => act('reject')}>
        Keep the old key of {r.address}
      </button>
      {error !== null && <span className="field-error"> {describeError(error)}</span>}
    </div>
  );
}

export function EncryptionPanel({ d, box }: { d: DraftState; box: Mailbox }) {
  const { sealed, encryption, choice, setChoice, decision } = d.secure;
  const { vault } = useVault(box.uid);
  const plan = encryption.plan;
  const signed = Boolean(sealed.keys?.signingCertificate);
  // Someone who never set up keys sees nothing here, unless the policy makes encryption matter.
  if (!vault?.enrolled && !sealed.sealedMode && !decision.blocked) return null;
  return (
    <section className="encryption-panel" aria-label="Encryption">
      <label>
        Encryption{' '}
        <select value={choice} onChange={(e) => setChoice(e.target.value as Choice)}>
          {(Object.keys(CHOICES) as Choice[]).map((c) => (
            <option key={c} value={c}>
              {CHOICES[c]}
            </option>
          ))}
        </select>
      </label>{' '}
      <span role="status">
        {decision.encrypt
          ? `This message will be encrypted${signed ? ' and signed' : ' (not signed: no signing certificate yet)'}.`
          : plan
            ? 'This message will not be encrypted.'
            : ''}
        {sealed.sealedMode && !decision.encrypt && ' Its draft is stored encrypted.'}
      </span>
      {decision.encrypt && parseRecipients(d.fields?.bcc ?? '').recipients.length > 0 && (
        <p className="muted">
          Bcc recipients are not named in the message, but the others can see which keys it was also encrypted to. Send them a separate
          message to keep them fully hidden.
        </p>
      )}
      {decision.blocked && (
        <p className="error" role="alert">
          {decision.blocked}
        </p>
      )}
      {encryption.error !== null && (
        <p className="error">Whether the recipients have keys could not be checked: {describeError(encryption.error)}</p>
      )}
      {plan && (
        <ul className="plain recipient-keys" aria-label="Encryption per recipient">
          {plan.recipients.map((r) => (
            <li key={r.address}>
              {r.address}: {recipientNote(r)}
              {r.key?.pin?.state === 'conflict' && <Conflict r={r} onResolve={encryption.resolve} />}
            </li>
          ))}
        </ul>
      )}
      {sealed.locked ? (
        <Unlock
          nested
          mailboxUid={box.uid}
          address={box.address}
          why="Your keys locked while you were writing: unlock them to go on saving this draft (it is never stored unencrypted)."
        />
      ) : (
        !sealed.keys && (
          <Unlock
            nested
            mailboxUid={box.uid}
            address={box.address}
            quiet={!decision.blocked}
            why="Unlock your keys to write this message encrypted. Until then its draft is saved unencrypted."
          />
        )
      )}
    </section>
  );
}
