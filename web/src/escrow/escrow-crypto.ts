// The holders' side of escrow access, in the browser (Spec: Key escrow access): the scope's private
// key is read from a file into a non-extractable CryptoKey that never leaves this page; with it the
// released escrow wraps give each custodian's master key, which opens their sealed encryption key;
// the matter export's messages are checked against the manifest's SHA-256 and decrypted here. The
// server only ever sends ciphertext.
import {
  decryptAndVerify,
  masterKeyFromEscrow,
  parseEntity,
  unlockWithMasterKey,
  unpem,
  type VaultView,
} from '../../../lib/keys/client/index.js';

/** A WebCrypto key, as both the browser's and Node's typings name it (this module is unit-tested in Node). */
type CryptoKey = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

export interface MaterialItem {
  mailboxUid: string;
  masterKeyGeneration: number | null;
  escrowWrap: Record<string, unknown> | null;
  sealedEncryptionKey?: { iv: string; ciphertext: string } | null;
  sealedSigningKey?: { iv: string; ciphertext: string } | null;
  encryptionCertificate: string | null;
}

export interface ManifestEntry {
  uid: string;
  mailboxUid: string;
  date: string;
  subject: string;
  fromAddress: string;
  smime: 'encrypted' | 'signed' | null;
  sha256: string;
  offset: number;
  length: number;
}

/** A custodian's encryption key and certificate, unlocked in memory. */
export interface CustodianKey {
  certPem: string;
  key: CryptoKey;
}

/** The scope's private key (PKCS#8 PEM, P-256) as a CryptoKey that cannot be exported again. */
export async function importScopeKey(pemText: string): Promise<CryptoKey> {
  if (!/-----BEGIN PRIVATE KEY-----/.test(pemText)) throw new Error('the file is not a PKCS#8 private key (-----BEGIN PRIVATE KEY-----)');
  const der = unpem(pemText);
  return crypto.subtle.importKey(
    'pkcs8',
    der.buffer.slice(der.byteOffset, der.byteOffset + der.byteLength) as ArrayBuffer,
    { name: 'ECDH', namedCurve: 'P-256' },
    false,
    ['deriveBits'],
  );
}

/** Opens every custodian's escrow wrap with the scope key; a custodian without a wrap (never enrolled) is left out, with why. */
export async function custodianKeys(
  material: MaterialItem[],
  scopeCertPem: string,
  scopeKey: CryptoKey,
): Promise<{ keys: Map<string, CustodianKey>; missing: Array<{ mailboxUid: string; why: string }> }> {
  const keys = new Map<string, CustodianKey>();
  const missing: Array<{ mailboxUid: string; why: string }> = [];
  for (const m of material) {
    if (!m.escrowWrap || m.masterKeyGeneration === null || !m.sealedEncryptionKey || !m.sealedSigningKey || !m.encryptionCertificate) {
      missing.push({ mailboxUid: m.mailboxUid, why: 'no escrow wrap: the owner has not added one (or has no key vault)' });
      continue;
    }
    const master = await masterKeyFromEscrow(m.escrowWrap as never, m.masterKeyGeneration, scopeCertPem, scopeKey as never);
    const view = {
      mailboxUid: m.mailboxUid,
      masterKeyGeneration: m.masterKeyGeneration,
      sealedSigningKey: m.sealedSigningKey,
      sealedEncryptionKey: m.sealedEncryptionKey,
    } as VaultView;
    const unlocked = await unlockWithMasterKey(view, master);
    master.fill(0);
    keys.set(m.mailboxUid, { certPem: m.encryptionCertificate, key: unlocked.encryptionKey as unknown as CryptoKey });
  }
  return { keys, missing };
}

const GT = 0x3e;
const NL = 0x0a;

/** mboxrd: a line of one or more '>' followed by "From " lost one '>' when it was written. */
export function mboxrdUnquote(quoted: Uint8Array): Uint8Array<ArrayBuffer> {
  const out: number[] = [];
  let lineStart = true;
  for (let i = 0; i < quoted.length; i++) {
    if (lineStart && quoted[i] === GT) {
      let j = i;
      while (quoted[j] === GT) j++;
      const from = String.fromCharCode(...quoted.subarray(j, j + 5));
      if (from === 'From ') i++; // drop one '>'
    }
    out.push(quoted[i]);
    lineStart = quoted[i] === NL;
  }
  return Uint8Array.from(out);
}

const hex = (b: ArrayBuffer) => [...new Uint8Array(b)].map((x) => x.toString(16).padStart(2, '0')).join('');

/** The body of a single-part entity decoded (base64 or quoted-printable); other entities as they are. */
export function readable(entity: string): string {
  const e = parseEntity(entity);
  const cte = (e.headers['content-transfer-encoding'] ?? '').toLowerCase();
  const bytes =
    cte === 'base64'
      ? Uint8Array.from(atob(e.body.replace(/\s+/g, '')), (c) => c.charCodeAt(0))
      : cte === 'quoted-printable'
        ? Uint8Array.from(
            e.body.replace(/=\r?\n/g, '').replace(/=([0-9A-F]{2})/gi, (_, h: string) => String.fromCharCode(parseInt(h, 16))),
            (c) => c.charCodeAt(0),
          )
        : null;
  if (/^multipart\//i.test(e.headers['content-type'] ?? '')) return entity;
  return bytes ? new TextDecoder().decode(bytes) : e.body;
}

export interface Opened {
  entry: ManifestEntry;
  /** The bytes match the manifest's SHA-256. */
  intact: boolean;
  text: string;
  encrypted: boolean;
  signer: string | null;
  error: string | null;
}

/** One message of the export: checked against the manifest, decrypted with its custodian's key when encrypted, its text made readable. */
export async function openMessage(mbox: Uint8Array, entry: ManifestEntry, keys: Map<string, CustodianKey>): Promise<Opened> {
  const raw = mboxrdUnquote(mbox.subarray(entry.offset, entry.offset + entry.length));
  const intact = hex(await crypto.subtle.digest('SHA-256', raw)) === entry.sha256;
  const text = new TextDecoder().decode(raw); // S/MIME is ASCII (base64); a plain message's 8-bit text is mostly UTF-8
  const base = { entry, intact, encrypted: entry.smime === 'encrypted', signer: null, error: null };
  try {
    const key = keys.get(entry.mailboxUid) ?? null;
    if (entry.smime === 'encrypted' && !key) return { ...base, text: '', error: 'no key for this custodian' };
    const opened = await decryptAndVerify(text, key as never);
    return { ...base, text: readable(opened.entity), signer: opened.signature?.signerEmails.join(', ') ?? null };
  } catch (e) {
    return { ...base, text: '', error: (e as Error).message };
  }
}
