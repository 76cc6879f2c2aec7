import type { webcrypto } from 'node:crypto';
import { b64Lines, fromB64, fromUtf8, utf8 } from './bytes.js';
import type * as pkijs from 'pkijs';
import { emailsOfCert, envelope, openEnvelope, sign, signedParts, verify } from './cms.js';

// S/MIME (RFC 8551) entities around the CMS structures: sign, then encrypt; decrypt, then verify.

type CryptoKey = webcrypto.CryptoKey;

const P7M = (type: 'enveloped-data' | 'signed-data') =>
  `MIME-Version: 1.0\r\nContent-Type: application/pkcs7-mime; smime-type=${type}; name="smime.p7m"\r\nContent-Transfer-Encoding: base64\r\nContent-Disposition: attachment; filename="smime.p7m"\r\n\r\n`;

/** LF → CRLF (the canonical form S/MIME signs). */
export const canonical = (s: string): string => s.replace(/\r?\n/g, '\r\n');

export interface Entity {
  headers: Record<string, string>;
  body: string;
}

/** Splits a MIME entity into lowercase header names (unfolded) and the body text. */
export function parseEntity(text: string): Entity {
  const t = canonical(text);
  const cut = t.indexOf('\r\n\r\n');
  const head = cut < 0 ? t : t.slice(0, cut);
  const body = cut < 0 ? '' : t.slice(cut + 4);
  const headers: Record<string, string> = {};
  for (const line of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) {
    const i = line.indexOf(':');
    if (i > 0) headers[line.slice(0, i).trim().toLowerCase()] = line.slice(i + 1).trim();
  }
  return { headers, body };
}

const param = (value: string, name: string): string | undefined => new RegExp(`;\\s*${name}\\s*=\\s*"?([^";]+)"?`, 'i').exec(value)?.[1];

/** An opaque signed entity (application/pkcs7-mime; smime-type=signed-data). */
export async function signEntity(entity: string, certPem: string, key: CryptoKey, chain: string[] = []): Promise<string> {
  return P7M('signed-data') + b64Lines(await sign(utf8(canonical(entity)), certPem, key, { chain })) + '\r\n';
}

/** Signs `entity` (a MIME entity: headers, blank line, body) and encrypts it to every recipient certificate (the sender's own included by the caller). */
export async function encryptAndSign(
  entity: string,
  signer: { certPem: string; key: CryptoKey; chain?: string[] },
  recipients: string[],
): Promise<string> {
  const signed = await signEntity(entity, signer.certPem, signer.key, signer.chain);
  return P7M('enveloped-data') + b64Lines(await envelope(utf8(signed), recipients)) + '\r\n';
}

/** Encrypts without signing. */
export async function encryptEntity(entity: string, recipients: string[]): Promise<string> {
  return P7M('enveloped-data') + b64Lines(await envelope(utf8(canonical(entity)), recipients)) + '\r\n';
}

/** What a signature says: who signed, whether it verifies, whether the signer chains to a trusted certificate. */
export interface SignatureInfo {
  /** The signer's certificate (for a signature that does not verify: the first certificate the message carries, if any). */
  signerCertificate: pkijs.Certificate | null;
  /** rfc822Name entries of the signer certificate. */
  signerEmails: string[];
  trusted: boolean;
  /** False: the content was changed after signing, or the signature is broken (only with keepBadSignature). */
  valid: boolean;
  problem: string | null;
}

export interface Opened {
  /** The innermost MIME entity. */
  entity: string;
  encrypted: boolean;
  signature: SignatureInfo | null;
}

/** Verifies one signature; with `keep`, a signature that does not verify is reported instead of thrown (the content is still shown, flagged). */
async function checkSignature(
  der: Uint8Array,
  detached: Uint8Array | undefined,
  trusted: string[],
  keep: boolean,
): Promise<{ content: Uint8Array; signature: SignatureInfo }> {
  try {
    const v = await verify(der, { content: detached, trusted });
    return {
      content: v.content,
      signature: { signerCertificate: v.signerCertificate, signerEmails: v.signerEmails, trusted: v.trusted, valid: true, problem: null },
    };
  } catch (e) {
    if (!keep) throw e;
    const parts = signedParts(der);
    const content = detached ?? parts.content;
    if (!content) throw e;
    const cert = parts.certificates[0] ?? null;
    const signature = {
      signerCertificate: cert,
      signerEmails: cert ? emailsOfCert(cert) : [],
      trusted: false,
      valid: false,
      problem: (e as Error).message,
    };
    return { content, signature };
  }
}

/** Decrypts (when enveloped) and verifies (opaque or multipart/signed) an S/MIME message. */
export async function decryptAndVerify(
  message: string,
  recipient: { certPem: string; key: CryptoKey } | null,
  trusted: string[] = [],
  opts: { keepBadSignature?: boolean } = {},
): Promise<Opened> {
  const keep = opts.keepBadSignature ?? false;
  let text = canonical(message);
  let encrypted = false;
  let signature: Opened['signature'] = null;
  for (let depth = 0; depth < 4; depth++) {
    const e = parseEntity(text);
    const ct = e.headers['content-type'] ?? 'text/plain';
    const smime = (param(ct, 'smime-type') ?? '').toLowerCase();
    if (/^application\/(x-)?pkcs7-mime/i.test(ct) && smime !== 'signed-data') {
      if (!recipient) throw new Error('an encrypted message needs the recipient key');
      text = canonical(fromUtf8(await openEnvelope(fromB64(e.body), recipient.certPem, recipient.key)));
      encrypted = true;
      continue;
    }
    if (/^application\/(x-)?pkcs7-mime/i.test(ct)) {
      const v = await checkSignature(fromB64(e.body), undefined, trusted, keep);
      signature = v.signature;
      text = canonical(fromUtf8(v.content));
      continue;
    }
    // multipart/signed with an S/MIME signature only: a PGP/MIME one is not ours to check.
    if (/^multipart\/signed/i.test(ct) && /pkcs7-signature/i.test(param(ct, 'protocol') ?? '')) {
      const boundary = param(ct, 'boundary');
      if (!boundary) throw new Error('multipart/signed without a boundary');
      const parts = e.body.split(`--${boundary}`);
      if (parts.length < 3) throw new Error('multipart/signed needs two parts');
      const signedPart = parts[1]!.replace(/^\r\n/, '').replace(/\r\n$/, '');
      const sigEntity = parseEntity(parts[2]!.replace(/^\r\n/, ''));
      signature = (await checkSignature(fromB64(sigEntity.body), utf8(signedPart), trusted, keep)).signature;
      text = signedPart;
      continue;
    }
    break;
  }
  return { entity: text, encrypted, signature };
}
