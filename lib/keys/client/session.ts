import {
  argon2Key,
  newArgon2Params,
  newKeys,
  passwordWrapWithKey,
  recoveryCodesWrap,
  sealKeys,
  DEFAULT_ARGON2,
  type NewKeys,
} from './vault.js';
import type { Argon2Params, Sealed, VaultView, WrapInput } from './format.js';

// Building the request bodies of the key vault routes, and a thin HTTP client for them.

export interface EnrolBody {
  expectedMasterKeyGeneration: number;
  signingPublicKey: string;
  encryptionCsr: string;
  sealedSigningKey: Sealed;
  sealedEncryptionKey: Sealed;
  wraps: WrapInput[];
}

export interface CreatedVault {
  body: EnrolBody;
  keys: NewKeys;
  recoveryCodes: string[];
  generation: number;
}

/**
 * A new vault (or a rekey when `current` is the vault's present generation): P-256 signing and
 * encryption key pairs, a random 32-byte master key, an Argon2id password wrap and eight recovery codes.
 */
export async function createVault(
  mailboxUid: string,
  address: string,
  password: string,
  opts: {
    current?: number;
    argon2?: typeof DEFAULT_ARGON2;
    /** Derives the password key (a browser runs Argon2id in a Web Worker); argon2Key here by default. */
    derive?: (password: string, kdf: Argon2Params) => Promise<Uint8Array>;
  } = {},
): Promise<CreatedVault> {
  const current = opts.current ?? 0;
  const generation = current + 1;
  const keys = await newKeys(address);
  const sealed = await sealKeys(mailboxUid, generation, keys.masterKey, keys.signingPkcs8, keys.encryptionPkcs8);
  const kdf = newArgon2Params(opts.argon2);
  const pw = await passwordWrapWithKey(mailboxUid, generation, keys.masterKey, kdf, await (opts.derive ?? argon2Key)(password, kdf));
  const rc = await recoveryCodesWrap(mailboxUid, generation, keys.masterKey);
  return {
    body: {
      expectedMasterKeyGeneration: current,
      signingPublicKey: keys.signingPublicKey,
      encryptionCsr: keys.encryptionCsr,
      ...sealed,
      wraps: [pw, rc.wrap],
    },
    keys,
    recoveryCodes: rc.codes,
    generation,
  };
}

export class VaultApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

/** The key vault routes of one mailbox over fetch (Bearer token or the browser's cookies). */
export class VaultClient {
  constructor(
    readonly baseUrl: string,
    readonly mailboxUid: string,
    readonly auth: { token?: string; csrf?: string } = {},
  ) {}

  async #call<T>(method: string, path: string, body?: unknown): Promise<T> {
    const headers: Record<string, string> = {};
    if (this.auth.token) headers.authorization = `Bearer ${this.auth.token}`;
    if (this.auth.csrf) headers['x-csrf-token'] = this.auth.csrf;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const res = await fetch(`${this.baseUrl}/api/mail/mailboxes/${encodeURIComponent(this.mailboxUid)}/${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
      credentials: 'include',
    });
    const json = (await res.json().catch(() => ({}))) as { code?: string; message?: string };
    if (!res.ok) throw new VaultApiError(res.status, json.code ?? '', json.message ?? res.statusText);
    return json as T;
  }

  read(): Promise<VaultView> {
    return this.#call('GET', 'keyvault');
  }

  enroll(body: EnrolBody): Promise<VaultView> {
    return this.#call('POST', 'keyvault/enroll', body);
  }

  addWrap(expectedMasterKeyGeneration: number, wrap: WrapInput): Promise<VaultView> {
    return this.#call('POST', 'keyvault/wraps', { expectedMasterKeyGeneration, wrap });
  }

  removeWrap(expectedMasterKeyGeneration: number, wrapId: string): Promise<VaultView> {
    return this.#call('DELETE', `keyvault/wraps/${encodeURIComponent(wrapId)}?expectedMasterKeyGeneration=${expectedMasterKeyGeneration}`);
  }

  rekey(body: EnrolBody): Promise<VaultView> {
    return this.#call('POST', 'keyvault/rekey', body);
  }

  lookup(addr: string): Promise<{ address: string; source: string; certificate: string; fingerprint: string; pin: unknown }> {
    return this.#call('GET', `keys/lookup?addr=${encodeURIComponent(addr)}`);
  }
}
