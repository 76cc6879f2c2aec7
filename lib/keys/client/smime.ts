import type { webcrypto } from 'node:crypto';
import { b64Lines, fromB64, fromUtf8, utf8 } from './bytes.js';
import { envelope, openEnvelope, sign, verify, type Verified } from './cms.js';

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

export interface Opened {
  /** The innermost MIME entity. */
  entity: string;
  encrypted: boolean;
  signature: Omit<Verified, 'content'> | null;
}

/** Decrypts (when enveloped) and verifies (opaque or multipart/signed) an S/MIME message. */
export async function decryptAndVerify(
  message: string,
  recipient: { certPem: string; key: CryptoKey } | null,
  trusted: string[] = [],
): Promise<Opened> {
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
      const v = await verify(fromB64(e.body), { trusted });
      signature = { signerCertificate: v.signerCertificate, signerEmails: v.signerEmails, trusted: v.trusted };
      text = canonical(fromUtf8(v.content));
      continue;
    }
    if (/^multipart\/signed/i.test(ct)) {
      const boundary = param(ct, 'boundary');
      if (!boundary) throw new Error('multipart/signed without a boundary');
      const parts = e.body.split(`--${boundary}`);
      if (parts.length < 3) throw new Error('multipart/signed needs two parts');
      const signedPart = parts[1]!.replace(/^\r\n/, '').replace(/\r\n$/, '');
      const sigEntity = parseEntity(parts[2]!.replace(/^\r\n/, ''));
      const v = await verify(fromB64(sigEntity.body), { content: utf8(signedPart), trusted });
      signature = { signerCertificate: v.signerCertificate, signerEmails: v.signerEmails, trusted: v.trusted };
      text = signedPart;
      continue;
    }
    break;
  }
  return { entity: text, encrypted, signature };
}
