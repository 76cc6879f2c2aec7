// The key vault from the browser (Spec: Key vault; "Exact sub-paths and bodies of the key vault
// operations" are ours, in the OpenAPI): set up, unlock, add and remove unlock methods, rekey. The
// master key and the private keys exist here only while an operation needs them; what stays after an
// unlock is in keyring.ts, as keys that cannot be exported. Loaded on first use (pkijs and the rest).
import {
  createVault,
  escrowWrap,
  masterKeyFromPasskey,
  masterKeyFromPasswordKey,
  masterKeyFromRecoveryCode,
  newArgon2Params,
  passkeyWrap,
  passwordKdf,
  passwordWrapWithKey,
  recoveryCodesWrap,
  unlockWithMasterKey,
  utf8,
  type EnrolBody,
  type VaultView,
  type WrapInput,
} from '../../../lib/keys/client/index.js';
import * as x509 from '@peculiar/x509';
import { fromB64 } from '../../../lib/keys/client/bytes.js';
import { api, Problem } from '../shared/api.js';
import { derivePasswordKey } from './derive.js';
import { setUnlocked, type Key, type UnlockedVault } from './keyring.js';
import { createPasskey, passkeySecret } from './passkey.js';

/** How the user proves they hold the vault: the encryption password, one recovery code, or a passkey. */
export type Secret = { kind: 'password'; password: string } | { kind: 'recovery'; code: string } | { kind: 'passkey' };

/** Elapsed milliseconds of a password derivation, for the view's progress. */
export type Tick = (elapsedMs: number) => void;

const path = (mailboxUid: string, rest: string) => `/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}/${rest}`;

export const readVault = (mailboxUid: string) => api<VaultView>(path(mailboxUid, 'keyvault'));

interface EscrowInfo {
  scope: { uid: string; certificatePem: string } | null;
  needsEscrowWrap: boolean;
}

async function masterKeyOf(vault: VaultView, secret: Secret, tick?: Tick): Promise<Uint8Array> {
  if (secret.kind === 'password')
    return masterKeyFromPasswordKey(vault, await derivePasswordKey(secret.password, passwordKdf(vault), tick)).catch(() => {
      throw new Problem('The encryption password is not right.');
    });
  if (secret.kind === 'recovery')
    return masterKeyFromRecoveryCode(vault, secret.code).catch((e: Error) => {
      throw new Problem(
        /32 letters/.test(e.message)
          ? 'A recovery code has 32 letters and digits (dashes optional).'
          : 'That recovery code does not match.',
      );
    });
  const p = await passkeySecret(vault);
  return masterKeyFromPasskey(vault, p.credentialId, p.secret);
}

/** The search index's key: HKDF of the master key, bound to the mailbox; AES-GCM, not exportable. */
async function indexKeyOf(masterKey: Uint8Array, mailboxUid: string): Promise<Key> {
  const ikm = await crypto.subtle.importKey('raw', masterKey as Uint8Array<ArrayBuffer>, 'HKDF', false, ['deriveKey']);
  return crypto.subtle.deriveKey(
    {
      name: 'HKDF',
      hash: 'SHA-256',
      salt: utf8(mailboxUid) as Uint8Array<ArrayBuffer>,
      info: utf8('svcmail local search index v1') as Uint8Array<ArrayBuffer>,
    },
    ikm,
    { name: 'AES-GCM', length: 256 },
    false,
    ['encrypt', 'decrypt'],
  );
}

/** Adds the escrow wrap when the mailbox's scope wants one for this generation (the owner's client does it, holding the master key). */
async function escrowIfNeeded(vault: VaultView, masterKey: Uint8Array): Promise<VaultView> {
  const info = await api<EscrowInfo>(path(vault.mailboxUid, 'escrow')).catch(() => null);
  if (!info?.needsEscrowWrap || !info.scope) return vault;
  const wrap = await escrowWrap(vault.mailboxUid, vault.masterKeyGeneration, masterKey, info.scope.uid, info.scope.certificatePem);
  return addWrapBody(vault, wrap);
}

/** Opens the keys with the master key, keeps them in the keyring, and forgets the master key. */
async function keep(vault: VaultView, address: string, masterKey: Uint8Array): Promise<UnlockedVault> {
  try {
    const keys = await unlockWithMasterKey(vault, masterKey);
    keys.signingPkcs8.fill(0);
    keys.encryptionPkcs8.fill(0);
    const unlocked: UnlockedVault = {
      mailboxUid: vault.mailboxUid,
      address,
      generation: vault.masterKeyGeneration,
      encryptionKey: keys.encryptionKey as unknown as Key,
      signingKey: keys.signingKey as unknown as Key,
      encryptionCertificate: vault.encryptionCertificate ?? '',
      signingCertificate: vault.signingCertificate ?? null,
      caCertificates: vault.caCertificates ?? [],
      indexKey: await indexKeyOf(masterKey, vault.mailboxUid),
    };
    await escrowIfNeeded(vault, masterKey).catch(() => undefined); // tried again at the next unlock
    setUnlocked(unlocked);
    return unlocked;
  } finally {
    masterKey.fill(0);
  }
}

/** Unlocks the vault with a secret: its keys go to the keyring. */
export async function unlock(vault: VaultView, address: string, secret: Secret, tick?: Tick): Promise<UnlockedVault> {
  const start = performance.now();
  const keys = await keep(vault, address, await masterKeyOf(vault, secret, tick));
  performance.measure(`svcmail:unlock-${secret.kind}`, { start, end: performance.now() }); // read by bench/web-crypto.ts
  return keys;
}

const addWrapBody = (vault: VaultView, wrap: WrapInput) =>
  api<VaultView>(path(vault.mailboxUid, 'keyvault/wraps'), {
    method: 'POST',
    body: { expectedMasterKeyGeneration: vault.masterKeyGeneration, wrap },
  });

/** What set-up and rekey answer: the vault as stored and the recovery codes, shown once. */
export interface NewVault {
  vault: VaultView;
  recoveryCodes: string[];
}

/** Creates the vault (first enrolment) or replaces every key (rekey): keys made here, the encryption certificate issued in the same request. */
export async function enrol(current: VaultView, address: string, password: string, tick?: Tick): Promise<NewVault> {
  const rekey = current.enrolled;
  const made = await createVault(current.mailboxUid, address, password, {
    current: current.masterKeyGeneration,
    derive: (pw, kdf) => derivePasswordKey(pw, kdf, tick),
  });
  const body: EnrolBody = made.body;
  const info = await api<EscrowInfo>(path(current.mailboxUid, 'escrow')).catch(() => null);
  if (info?.scope)
    body.wraps.push(await escrowWrap(current.mailboxUid, made.generation, made.keys.masterKey, info.scope.uid, info.scope.certificatePem));
  const vault = await api<VaultView>(path(current.mailboxUid, rekey ? 'keyvault/rekey' : 'keyvault/enroll'), { method: 'POST', body });
  await keep(vault, address, made.keys.masterKey);
  // The signing certificate is asked for at once; the settings offer it again if this fails.
  await askSigning(vault, made.keys.signingCsr).catch(() => undefined);
  made.keys.signingPkcs8.fill(0);
  made.keys.encryptionPkcs8.fill(0);
  return { vault, recoveryCodes: made.recoveryCodes };
}

/** A change of unlock methods: proven with a secret, the new wrap made with the master key it opens. */
async function withMasterKey<T>(
  vault: VaultView,
  secret: Secret,
  tick: Tick | undefined,
  step: (mk: Uint8Array) => Promise<T>,
): Promise<T> {
  const mk = await masterKeyOf(vault, secret, tick);
  try {
    return await step(mk);
  } finally {
    mk.fill(0);
  }
}

/** A new encryption password (replaces the old one). */
export function changePassword(vault: VaultView, secret: Secret, password: string, tick?: Tick): Promise<VaultView> {
  return withMasterKey(vault, secret, tick, async (mk) => {
    const kdf = newArgon2Params();
    const key = await derivePasswordKey(password, kdf, tick);
    return addWrapBody(vault, await passwordWrapWithKey(vault.mailboxUid, vault.masterKeyGeneration, mk, kdf, key));
  });
}

/** Eight new recovery codes (the old ones stop working). */
export function newRecoveryCodes(vault: VaultView, secret: Secret, tick?: Tick): Promise<NewVault> {
  return withMasterKey(vault, secret, tick, async (mk) => {
    const rc = await recoveryCodesWrap(vault.mailboxUid, vault.masterKeyGeneration, mk);
    return { vault: await addWrapBody(vault, rc.wrap), recoveryCodes: rc.codes };
  });
}

/** A passkey that unlocks the vault (WebAuthn PRF), named by `label`. */
export function addPasskey(vault: VaultView, address: string, secret: Secret, label: string, tick?: Tick): Promise<VaultView> {
  return withMasterKey(vault, secret, tick, async (mk) => {
    const p = await createPasskey(address);
    const wrap = await passkeyWrap(
      vault.mailboxUid,
      vault.masterKeyGeneration,
      mk,
      p.credentialId,
      p.prfSalt,
      p.secret,
      label || undefined,
    );
    return addWrapBody(vault, wrap);
  });
}

export const removeWrap = (vault: VaultView, wrapId: string) =>
  api<VaultView>(
    path(vault.mailboxUid, `keyvault/wraps/${encodeURIComponent(wrapId)}?expectedMasterKeyGeneration=${vault.masterKeyGeneration}`),
    {
      method: 'DELETE',
    },
  );

const askSigning = (vault: VaultView, csr: string) =>
  api(path(vault.mailboxUid, 'keyvault/signing-enrollment'), {
    method: 'POST',
    body: { expectedMasterKeyGeneration: vault.masterKeyGeneration, csr },
  });

/** Asks (again) for a signing certificate: a PKCS#10 request signed with the unlocked signing key. */
export async function requestSigning(vault: VaultView, keys: UnlockedVault): Promise<unknown> {
  if (!vault.signingPublicKey) throw new Problem('The vault has no signing key.');
  const spki = fromB64(vault.signingPublicKey);
  const publicKey = await crypto.subtle.importKey('spki', spki as Uint8Array<ArrayBuffer>, { name: 'ECDSA', namedCurve: 'P-256' }, true, [
    'verify',
  ]);
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `E=${keys.address}`,
    keys: { privateKey: keys.signingKey, publicKey },
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'email', value: keys.address }])],
  });
  return askSigning(vault, csr.toString('pem'));
}
