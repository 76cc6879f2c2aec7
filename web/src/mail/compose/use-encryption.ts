// Whether the message goes out encrypted (Spec: Encryption policy; Discovered keys): the server's
// plan for the recipients (GET keys/recipients: each one's class, the policy's rule, the key), the
// user's choice, and whether the keys are unlocked decide it, and say per recipient why or why not.
// A changed key of a pinned contact blocks sending until the user accepts or rejects it.
import { useCallback, useEffect, useState } from 'react';
import { api } from '../../shared/api.js';
import { parseRecipients } from './addresses.js';
import type { Fields } from './open.js';

export interface PlanRecipient {
  address: string;
  class: 'sameOrg' | 'federated' | 'external';
  rule: 'automatic' | 'optional' | 'prohibited';
  kind: 'mailbox' | 'list' | 'unknown' | 'remote';
  key: {
    source: 'local' | 'federated';
    certificate: string;
    fingerprint: string;
    pin: { uid: string; state: 'pinned' | 'conflict'; fingerprint: string; pendingFingerprint: string | null; firstUse: boolean } | null;
    /** Federated keys: whether their server answered now (else the pinned key is used). */
    remote: 'found' | 'absent' | 'unreachable' | null;
  } | null;
  lookup: 'found' | 'none' | 'unreachable';
}

export interface Plan {
  recipients: PlanRecipient[];
  encryptable: boolean;
  plaintextAllowed: boolean;
}

/** The user's choice: let the policy and the keys decide (auto), or ask for encryption or for none. */
export type Choice = 'auto' | 'on' | 'off';

export interface Decision {
  encrypt: boolean;
  /** Why the message cannot be sent as it is; null when it can. */
  blocked: string | null;
}

const CLASS = { sameOrg: 'this organisation', federated: 'a federated server', external: 'outside servers' } as const;

/** One recipient's line: will it be encrypted, and if not, why not. */
export function recipientNote(r: PlanRecipient): string {
  if (r.key?.pin?.state === 'conflict') return 'their key changed: accept or reject the new key before sending';
  if (r.rule === 'prohibited') return `not encrypted: the policy prohibits encryption to ${CLASS[r.class]}`;
  if (r.kind === 'list') return 'not encrypted: a distribution list has no key';
  if (r.lookup === 'unreachable') return 'not encrypted: their server could not be asked for a key';
  if (!r.key) return 'not encrypted: no key was found';
  const required = r.rule === 'automatic' ? '; the policy requires it' : '';
  if (r.key.source === 'federated' && r.key.remote !== 'found')
    return `encrypted to the key pinned for them (their server did not answer for it now${required})`;
  const from = r.key.source === 'local' ? 'this server' : 'their server';
  const pin = r.key.source === 'federated' ? (r.key.pin ? ', pinned' : ', pinned when you send') : '';
  return `encrypted (key from ${from}${pin}${required})`;
}

/** Why the send path would refuse this message in the clear: a pinned key (no downgrade), or the policy. */
function plaintextRefusal(plan: Plan): string {
  const why = plan.recipients.flatMap((r) => {
    if (!r.key) return [];
    if (r.key.pin) return [`the key of ${r.address} is pinned`];
    return r.rule === 'automatic' ? [`the policy requires encryption to ${r.address}`] : [];
  });
  return `You chose not to encrypt, but ${why.join(' and ') || 'the encryption policy requires encryption'}: it can only be sent encrypted.`;
}

/** What the send does with this plan, choice and key state. */
export function decide(plan: Plan | null, choice: Choice, unlocked: boolean): Decision {
  if (!plan || !plan.recipients.length) return { encrypt: choice === 'on' && unlocked, blocked: null };
  const conflict = plan.recipients.find((r) => r.key?.pin?.state === 'conflict');
  if (conflict) return { encrypt: false, blocked: `The key of ${conflict.address} changed: accept or reject the new key first.` };
  const mustEncrypt = !plan.plaintextAllowed;
  const missing = plan.recipients.filter((r) => !r.key || r.rule === 'prohibited').map((r) => r.address);
  // "Do not encrypt" is the user's word: never overruled in silence (sent encrypted after all), refused with why.
  if (choice === 'off') return { encrypt: false, blocked: mustEncrypt ? plaintextRefusal(plan) : null };
  if (!plan.encryptable) {
    if (mustEncrypt || choice === 'on')
      return {
        encrypt: false,
        blocked: `${mustEncrypt ? 'This message must be encrypted' : 'You asked for encryption'}, but it cannot be encrypted to ${missing.join(', ')}: remove them or send them a separate message.`,
      };
    return { encrypt: false, blocked: null };
  }
  if (!unlocked)
    return mustEncrypt || choice === 'on'
      ? { encrypt: false, blocked: 'Unlock your keys to send this message encrypted.' }
      : { encrypt: false, blocked: null };
  return { encrypt: true, blocked: null };
}

/** Every recipient of the form, each once, lowercased and sorted, comma-separated ('' for none). */
const addressesOf = (f: Fields | null) =>
  f
    ? [...new Set([f.to, f.cc, f.bcc].flatMap((x) => parseRecipients(x).recipients.map((r) => r.address.toLowerCase())))].sort().join(',')
    : '';

const planPath = (mailboxUid: string, addrs: string) =>
  `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/keys/recipients?addr=${encodeURIComponent(addrs)}`;

/** The plan for the form's recipients as it is now (a send decides on this, not on what the view last showed). */
export async function fetchPlan(mailboxUid: string, f: Fields): Promise<Plan | null> {
  const addrs = addressesOf(f);
  return addrs ? api<Plan>(planPath(mailboxUid, addrs)) : null;
}

/** The plan for the form's recipients, asked again a moment after they change; accept/reject a changed key. */
export function useEncryptionPlan(mailboxUid: string, fields: Fields | null) {
  const [plan, setPlan] = useState<Plan | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [round, setRound] = useState(0);
  const addrs = addressesOf(fields);
  useEffect(() => {
    if (!addrs) return setPlan(null);
    let live = true;
    const timer = setTimeout(() => {
      api<Plan>(planPath(mailboxUid, addrs)).then(
        (p) => live && (setPlan(p), setError(null)),
        (e) => live && setError(e),
      );
    }, 400);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [mailboxUid, addrs, round]);
  const resolve = useCallback(
    async (r: PlanRecipient, decision: 'accept' | 'reject') => {
      await api(
        `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/keys/discovered/${encodeURIComponent(r.key!.pin!.uid)}/${decision}`,
        {
          method: 'POST',
        },
      );
      setRound((n) => n + 1);
    },
    [mailboxUid],
  );
  return { plan: addrs ? plan : null, error, resolve, pending: Boolean(addrs) && plan === null && error === null };
}

/**
 * The certificates to encrypt to, as the send uses them: a federated key not pinned yet is looked up
 * once more through GET keys/lookup, which pins it (its first use); a key that changed meanwhile is a
 * conflict the user decides first.
 */
export async function certificatesFor(mailboxUid: string, plan: Plan): Promise<string[] | string> {
  const out: string[] = [];
  for (const r of plan.recipients) {
    if (!r.key) return `No key for ${r.address}.`;
    if (r.key.source !== 'federated' || r.key.pin) {
      out.push(r.key.certificate);
      continue;
    }
    const k = await api<{ certificate: string; pin: { state: string } | null }>(
      `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/keys/lookup?addr=${encodeURIComponent(r.address)}`,
    );
    if (k.pin?.state === 'conflict') return `The key of ${r.address} changed: accept or reject the new key first.`;
    out.push(k.certificate);
  }
  return out;
}
