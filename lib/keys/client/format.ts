// The vault formats the server stores and the client reads (Spec: Key vault). Shared by both so
// the additional authenticated data that binds a wrap to its mailbox and method is spelled once.

export const VAULT_FORMAT = 'svcmail-vault-v1';
export const MASTER_KEY_BYTES = 32;
export const RECOVERY_CODE_COUNT = 8;
export const RECOVERY_CODE_BYTES = 20; // 160 bits
export const WRAP_METHODS = ['password', 'recovery codes', 'passkey', 'escrow'] as const;
export type WrapMethod = (typeof WRAP_METHODS)[number];
export type SealedWhich = 'signing' | 'encryption';

export interface Sealed {
  iv: string;
  ciphertext: string;
}

export interface Argon2Params {
  name: 'argon2id';
  salt: string;
  memoryKiB: number;
  iterations: number;
  parallelism: number;
}

export interface PasswordWrap extends Sealed {
  method: 'password';
  mailboxUid: string;
  kdf: Argon2Params;
}
export interface RecoveryCodesWrap {
  method: 'recovery codes';
  mailboxUid: string;
  codes: Array<Sealed & { salt: string }>;
}
export interface PasskeyWrap extends Sealed {
  method: 'passkey';
  mailboxUid: string;
  credentialId: string;
  prfSalt: string;
  label?: string;
}
export interface EscrowWrap {
  method: 'escrow';
  mailboxUid: string;
  scopeUid: string;
  envelope: string;
}
export type WrapInput = PasswordWrap | RecoveryCodesWrap | PasskeyWrap | EscrowWrap;
export type StoredWrap = WrapInput & { id: string; masterKeyGeneration: number; createdAt: string };

/** AAD of a sealed private key: mailbox, which key, generation. */
export const sealAad = (mailboxUid: string, which: SealedWhich, generation: number): string =>
  `${VAULT_FORMAT}|seal|${mailboxUid}|${which}|${generation}`;

/** AAD of a wrap of the master key: mailbox, method, generation (a passkey adds its credential id). */
export const wrapAad = (mailboxUid: string, method: WrapMethod, generation: number, extra = ''): string =>
  `${VAULT_FORMAT}|wrap|${mailboxUid}|${method}|${generation}${extra ? `|${extra}` : ''}`;

/** What the server answers for a vault. */
export interface VaultView {
  mailboxUid: string;
  enrolled: boolean;
  masterKeyGeneration: number;
  escrowScopeUid: string | null;
  signingPublicKey?: string;
  encryptionPublicKey?: string;
  sealedSigningKey?: Sealed;
  sealedEncryptionKey?: Sealed;
  encryptionCertificate?: string;
  signingCertificate?: string | null;
  caCertificates?: string[];
  wraps: StoredWrap[];
  version?: number;
}
