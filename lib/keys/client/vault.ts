import type { webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { ab, concat, equalBytes, fromB64, random, toB64, toB64url, utf8 } from './bytes.js';
import { argon2Key } from './argon2.js';
import { envelope, openEnvelope } from './cms.js';

export { argon2Key };
import {
  MASTER_KEY_BYTES,
  RECOVERY_CODE_BYTES,
  RECOVERY_CODE_COUNT,
  sealAad,
  wrapAad,
  type Argon2Params,
  type EscrowWrap,
  type PasskeyWrap,
  type PasswordWrap,
  type RecoveryCodesWrap,
  type Sealed,
  type SealedWhich,
  type StoredWrap,
  type VaultView,
} from './format.js';

type CryptoKey = webcrypto.CryptoKey;
const subtle = () => crypto.subtle;

const EC_SIGN = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const EC_DH = { name: 'ECDH', namedCurve: 'P-256' } as const;

/** Default Argon2id parameters of a new password wrap (OWASP's second recommendation, 46 MiB, t=1 is weaker: we take 64 MiB, t=3). */
export const DEFAULT_ARGON2 = { memoryKiB: 65_536, iterations: 3, parallelism: 1 };

export interface UnlockedKeys {
  masterKey: Uint8Array;
  signingKey: CryptoKey;
  encryptionKey: CryptoKey;
  /** PKCS#8 of each key (what is sealed). */
  signingPkcs8: Uint8Array;
  encryptionPkcs8: Uint8Array;
}

async function aesKey(raw: Uint8Array, usage: 'encrypt' | 'decrypt'): Promise<CryptoKey> {
  return subtle().importKey('raw', ab(raw), 'AES-GCM', false, [usage]);
}

export async function sealBytes(key: Uint8Array, plain: Uint8Array, aad: string): Promise<Sealed> {
  const iv = random(12);
  const ct = await subtle().encrypt(
    { name: 'AES-GCM', iv: ab(iv), additionalData: ab(utf8(aad)) },
    await aesKey(key, 'encrypt'),
    ab(plain),
  );
  return { iv: toB64(iv), ciphertext: toB64(ct) };
}

export async function openBytes(key: Uint8Array, sealed: Sealed, aad: string): Promise<Uint8Array> {
  try {
    return new Uint8Array(
      await subtle().decrypt(
        { name: 'AES-GCM', iv: ab(fromB64(sealed.iv)), additionalData: ab(utf8(aad)) },
        await aesKey(key, 'decrypt'),
        ab(fromB64(sealed.ciphertext)),
      ),
    );
  } catch {
    throw new Error('unlock failed: wrong secret, or the data is not bound to this mailbox and method');
  }
}

async function hkdf(ikm: Uint8Array, salt: Uint8Array, info: string): Promise<Uint8Array> {
  const k = await subtle().importKey('raw', ab(ikm), 'HKDF', false, ['deriveBits']);
  return new Uint8Array(await subtle().deriveBits({ name: 'HKDF', hash: 'SHA-256', salt: ab(salt), info: ab(utf8(info)) }, k, 256));
}

// ----- recovery codes: 160 random bits, shown as 8 groups of 4 base32 letters -----
const B32 = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ234567';

export function formatRecoveryCode(bytes: Uint8Array): string {
  let bits = 0;
  let value = 0;
  let out = '';
  for (const b of bytes) {
    value = (value << 8) | b;
    bits += 8;
    while (bits >= 5) {
      out += B32[(value >>> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out.match(/.{4}/g)!.join('-');
}

export function parseRecoveryCode(code: string): Uint8Array {
  const clean = code.toUpperCase().replace(/[^A-Z2-7]/g, '');
  if (clean.length !== 32) throw new Error('a recovery code has 32 letters and digits');
  const out = new Uint8Array(RECOVERY_CODE_BYTES);
  let bits = 0;
  let value = 0;
  let i = 0;
  for (const ch of clean) {
    value = (value << 5) | B32.indexOf(ch);
    bits += 5;
    if (bits >= 8) {
      out[i++] = (value >>> (bits - 8)) & 255;
      bits -= 8;
    }
  }
  return out;
}

// ----- wraps -----
export async function passwordWrap(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
  password: string,
  params = DEFAULT_ARGON2,
): Promise<PasswordWrap> {
  const kdf = newArgon2Params(params);
  return passwordWrapWithKey(mailboxUid, generation, masterKey, kdf, await argon2Key(password, kdf));
}

/** Fresh Argon2id parameters (a new salt) for a password wrap. */
export const newArgon2Params = (params = DEFAULT_ARGON2): Argon2Params => ({ name: 'argon2id', salt: toB64(random(16)), ...params });

/** A password wrap from a key already derived with `kdf` (a browser derives it in a Web Worker: argon2Key). */
export async function passwordWrapWithKey(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
  kdf: Argon2Params,
  passwordKey: Uint8Array,
): Promise<PasswordWrap> {
  const sealed = await sealBytes(passwordKey, masterKey, wrapAad(mailboxUid, 'password', generation));
  return { method: 'password', mailboxUid, kdf, ...sealed };
}

export async function recoveryCodesWrap(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
): Promise<{ wrap: RecoveryCodesWrap; codes: string[] }> {
  const codes: string[] = [];
  const entries: RecoveryCodesWrap['codes'] = [];
  for (let i = 0; i < RECOVERY_CODE_COUNT; i++) {
    const code = random(RECOVERY_CODE_BYTES);
    const salt = random(16);
    codes.push(formatRecoveryCode(code));
    entries.push({
      salt: toB64(salt),
      ...(await sealBytes(await hkdf(code, salt, 'svcmail recovery code'), masterKey, wrapAad(mailboxUid, 'recovery codes', generation))),
    });
  }
  return { wrap: { method: 'recovery codes', mailboxUid, codes: entries }, codes };
}

/** prfOutput: the WebAuthn PRF extension's `first` result for `prfSalt` (navigator.credentials.get). */
export async function passkeyWrap(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
  credentialId: Uint8Array,
  prfSalt: Uint8Array,
  prfOutput: Uint8Array,
  label?: string,
): Promise<PasskeyWrap> {
  const cred = toB64url(credentialId);
  const sealed = await sealBytes(
    await hkdf(prfOutput, prfSalt, 'svcmail passkey'),
    masterKey,
    wrapAad(mailboxUid, 'passkey', generation, cred),
  );
  return { method: 'passkey', mailboxUid, credentialId: cred, prfSalt: toB64(prfSalt), ...(label ? { label } : {}), ...sealed };
}

// ----- unlock -----
function wrapOf<M extends StoredWrap['method']>(
  vault: VaultView,
  method: M,
  pick?: (w: StoredWrap) => boolean,
): Extract<StoredWrap, { method: M }> {
  const w = vault.wraps.find((x) => x.method === method && (!pick || pick(x)));
  if (!w) throw new Error(`this vault has no ${method} wrap`);
  return w as Extract<StoredWrap, { method: M }>;
}

export async function masterKeyFromPassword(vault: VaultView, password: string): Promise<Uint8Array> {
  return masterKeyFromPasswordKey(vault, await argon2Key(password, passwordKdf(vault)));
}

/** The Argon2id parameters of the vault's password wrap (what a worker derives the key with). */
export const passwordKdf = (vault: VaultView): Argon2Params => wrapOf(vault, 'password').kdf;

/** The master key from a password key already derived with passwordKdf(vault). */
export async function masterKeyFromPasswordKey(vault: VaultView, passwordKey: Uint8Array): Promise<Uint8Array> {
  const w = wrapOf(vault, 'password');
  return openBytes(passwordKey, w, wrapAad(vault.mailboxUid, 'password', vault.masterKeyGeneration));
}

export async function masterKeyFromRecoveryCode(vault: VaultView, code: string): Promise<Uint8Array> {
  const w = wrapOf(vault, 'recovery codes');
  const bytes = parseRecoveryCode(code);
  for (const c of w.codes) {
    try {
      return await openBytes(
        await hkdf(bytes, fromB64(c.salt), 'svcmail recovery code'),
        c,
        wrapAad(vault.mailboxUid, 'recovery codes', vault.masterKeyGeneration),
      );
    } catch {
      /* another code's slot */
    }
  }
  throw new Error('unlock failed: the recovery code does not match');
}

export async function masterKeyFromPasskey(vault: VaultView, credentialId: Uint8Array, prfOutput: Uint8Array): Promise<Uint8Array> {
  const cred = toB64url(credentialId);
  const w = wrapOf(vault, 'passkey', (x) => (x as PasskeyWrap).credentialId === cred);
  return openBytes(
    await hkdf(prfOutput, fromB64(w.prfSalt), 'svcmail passkey'),
    w,
    wrapAad(vault.mailboxUid, 'passkey', vault.masterKeyGeneration, cred),
  );
}

/** Opens the sealed private keys with the master key. */
export async function unlockWithMasterKey(vault: VaultView, masterKey: Uint8Array): Promise<UnlockedKeys> {
  if (!vault.sealedSigningKey || !vault.sealedEncryptionKey) throw new Error('the vault is not enrolled');
  const signingPkcs8 = await openBytes(masterKey, vault.sealedSigningKey, sealAad(vault.mailboxUid, 'signing', vault.masterKeyGeneration));
  const encryptionPkcs8 = await openBytes(
    masterKey,
    vault.sealedEncryptionKey,
    sealAad(vault.mailboxUid, 'encryption', vault.masterKeyGeneration),
  );
  return {
    masterKey,
    signingPkcs8,
    encryptionPkcs8,
    signingKey: await subtle().importKey('pkcs8', ab(signingPkcs8), EC_SIGN, false, ['sign']),
    encryptionKey: await subtle().importKey('pkcs8', ab(encryptionPkcs8), EC_DH, false, ['deriveBits']),
  };
}

// ----- creating and rekeying -----
export interface NewKeys {
  masterKey: Uint8Array;
  signingPkcs8: Uint8Array;
  encryptionPkcs8: Uint8Array;
  signingPublicKey: string;
  encryptionPublicKey: string;
  encryptionCsr: string;
  signingCsr: string;
}

async function keyPairWithCsr(address: string): Promise<{ pkcs8: Uint8Array; spki: Uint8Array; csr: string }> {
  // Made as an ECDSA pair so the key can sign its own request (proof of possession); the same
  // P-256 key is imported as ECDH for decryption.
  const keys = (await subtle().generateKey(EC_SIGN, true, ['sign', 'verify'])) as webcrypto.CryptoKeyPair;
  const csr = await x509.Pkcs10CertificateRequestGenerator.create({
    name: `E=${address}`,
    keys: keys as unknown as CryptoKeyPair,
    signingAlgorithm: { name: 'ECDSA', hash: 'SHA-256' },
    extensions: [new x509.SubjectAlternativeNameExtension([{ type: 'email', value: address }])],
  });
  return {
    pkcs8: new Uint8Array(await subtle().exportKey('pkcs8', keys.privateKey)),
    spki: new Uint8Array(await subtle().exportKey('spki', keys.publicKey)),
    csr: csr.toString('pem'),
  };
}

export async function newKeys(address: string): Promise<NewKeys> {
  const s = await keyPairWithCsr(address);
  const e = await keyPairWithCsr(address);
  return {
    masterKey: random(MASTER_KEY_BYTES),
    signingPkcs8: s.pkcs8,
    encryptionPkcs8: e.pkcs8,
    signingPublicKey: toB64(s.spki),
    encryptionPublicKey: toB64(e.spki),
    encryptionCsr: e.csr,
    signingCsr: s.csr,
  };
}

export async function sealKeys(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
  signingPkcs8: Uint8Array,
  encryptionPkcs8: Uint8Array,
): Promise<{ sealedSigningKey: Sealed; sealedEncryptionKey: Sealed }> {
  return {
    sealedSigningKey: await sealBytes(masterKey, signingPkcs8, sealAad(mailboxUid, 'signing' satisfies SealedWhich, generation)),
    sealedEncryptionKey: await sealBytes(masterKey, encryptionPkcs8, sealAad(mailboxUid, 'encryption', generation)),
  };
}

type CryptoKeyPair = Parameters<typeof x509.Pkcs10CertificateRequestGenerator.create>[0]['keys'];

/**
 * The escrow wrap: the master key in a CMS EnvelopedData to the escrow scope certificate, prefixed
 * with its binding (mailbox, method, generation) so a released wrap cannot be passed off as another's.
 */
export async function escrowWrap(
  mailboxUid: string,
  generation: number,
  masterKey: Uint8Array,
  scopeUid: string,
  scopeCertPem: string,
): Promise<EscrowWrap> {
  const content = concat(utf8(wrapAad(mailboxUid, 'escrow', generation)), new Uint8Array([0]), masterKey);
  return { method: 'escrow', mailboxUid, scopeUid, envelope: toB64(await envelope(content, [scopeCertPem])) };
}

/** Opens an escrow wrap with the scope's certificate and ECDH key (the escrow holders' side). */
export async function masterKeyFromEscrow(
  wrap: EscrowWrap,
  generation: number,
  scopeCertPem: string,
  scopeKey: CryptoKey,
): Promise<Uint8Array> {
  const content = await openEnvelope(fromB64(wrap.envelope), scopeCertPem, scopeKey);
  const prefix = utf8(wrapAad(wrap.mailboxUid, 'escrow', generation));
  const head = content.subarray(0, prefix.length);
  if (content.length !== prefix.length + 1 + MASTER_KEY_BYTES || !equalBytes(head, prefix) || content[prefix.length] !== 0) {
    throw new Error('the escrow wrap is not bound to this mailbox and generation');
  }
  return content.slice(prefix.length + 1);
}
