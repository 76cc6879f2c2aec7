// Passkey unlock (Spec: Key vault, passkey wrap): a key derived from the WebAuthn PRF extension. The
// authenticator answers the same secret for the same credential and salt; the server keeps only the
// salt, the credential id and the master key sealed under that secret. No assertion is sent to the
// server: the passkey unlocks the vault here, it does not sign in.
import { fromB64, random, toB64url } from '../../../lib/keys/client/bytes.js';
import type { PasskeyWrap, StoredWrap, VaultView } from '../../../lib/keys/client/format.js';
import { Problem } from '../shared/api.js';

/** The PRF extension's input and output, as the WebAuthn Level 3 dictionaries spell them. */
interface PrfResults {
  prf?: { enabled?: boolean; results?: { first?: ArrayBuffer } };
}

const buf = (b: Uint8Array) => b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength) as ArrayBuffer;

/** Whether this browser can make passkeys with PRF (asked of the browser where it can say; else assumed and tried). */
export async function prfAvailable(): Promise<boolean> {
  if (!('PublicKeyCredential' in globalThis) || !navigator.credentials) return false;
  const caps = (PublicKeyCredential as unknown as { getClientCapabilities?(): Promise<Record<string, boolean>> }).getClientCapabilities;
  if (!caps) return true;
  const c = await caps.call(PublicKeyCredential).catch(() => ({}) as Record<string, boolean>);
  return c['extension:prf'] !== false;
}

/** The PRF secret of one credential for `salt` (a get with evalByCredential: the user picks among the vault's passkeys). */
async function prfOf(
  credentialIds: Uint8Array[],
  salts: Map<string, Uint8Array>,
): Promise<{ credentialId: Uint8Array; secret: Uint8Array }> {
  const evalByCredential = Object.fromEntries([...salts].map(([id, salt]) => [id, { first: buf(salt) }]));
  const cred = (await navigator.credentials.get({
    publicKey: {
      challenge: buf(random(32)),
      rpId: location.hostname,
      allowCredentials: credentialIds.map((id) => ({ type: 'public-key' as const, id: buf(id) })),
      userVerification: 'required',
      extensions: { prf: { evalByCredential } } as AuthenticationExtensionsClientInputs,
    },
  })) as PublicKeyCredential | null;
  if (!cred) throw new Problem('No passkey was chosen.');
  const first = (cred.getClientExtensionResults() as PrfResults).prf?.results?.first;
  if (!first) throw new Problem('This passkey cannot unlock the vault: its authenticator does not support the PRF extension.');
  return { credentialId: new Uint8Array(cred.rawId), secret: new Uint8Array(first) };
}

/** A new passkey for the vault, and its PRF secret for a new salt (asked again when the creation did not answer it). */
export async function createPasskey(address: string): Promise<{ credentialId: Uint8Array; prfSalt: Uint8Array; secret: Uint8Array }> {
  const prfSalt = random(32);
  const cred = (await navigator.credentials.create({
    publicKey: {
      rp: { name: 'svcmail encryption', id: location.hostname },
      user: { id: buf(random(16)), name: address, displayName: `${address} (encryption)` },
      challenge: buf(random(32)),
      pubKeyCredParams: [
        { type: 'public-key', alg: -7 },
        { type: 'public-key', alg: -257 },
      ],
      authenticatorSelection: { residentKey: 'preferred', userVerification: 'required' },
      extensions: { prf: { eval: { first: buf(prfSalt) } } } as AuthenticationExtensionsClientInputs,
    },
  })) as PublicKeyCredential | null;
  if (!cred) throw new Problem('No passkey was made.');
  const credentialId = new Uint8Array(cred.rawId);
  const results = cred.getClientExtensionResults() as PrfResults;
  if (results.prf?.enabled === false) throw new Problem('This authenticator does not support the PRF extension, which unlocking needs.');
  const first = results.prf?.results?.first;
  if (first) return { credentialId, prfSalt, secret: new Uint8Array(first) };
  const again = await prfOf([credentialId], new Map([[toB64url(credentialId), prfSalt]]));
  return { credentialId, prfSalt, secret: again.secret };
}

/** Asks for one of the vault's passkeys: the credential used and its PRF secret for that wrap's salt. */
export function passkeySecret(vault: VaultView): Promise<{ credentialId: Uint8Array; secret: Uint8Array }> {
  const wraps = vault.wraps.filter((w): w is StoredWrap & PasskeyWrap => w.method === 'passkey');
  if (!wraps.length) throw new Problem('This vault has no passkey.');
  return prfOf(
    wraps.map((w) => fromB64(w.credentialId)),
    new Map(wraps.map((w) => [w.credentialId, fromB64(w.prfSalt)])),
  );
}
