import { createHash, webcrypto } from 'node:crypto';
import * as x509 from '@peculiar/x509';
import { invalid } from '../errors/index.js';
import './ca.js'; // sets the x509 crypto provider

// Certificate shapes of the service: encryption certificates are P-256, for email protection and
// key agreement (Spec: Versioning, encryption certificate backends).

export const OID_EMAIL_PROTECTION = '1.3.6.1.5.5.7.3.4';
const P256 = { name: 'ECDSA', namedCurve: 'P-256' } as const;

export type CertKind = 'encryption' | 'signing';

export interface IssueRequest {
  /** PKCS#10 request signed with the key it names (proof of possession). */
  csr: x509.Pkcs10CertificateRequest;
  /** rfc822Name entries of the certificate (the mailbox's addresses). */
  emails: string[];
  kind: CertKind;
}

export interface Issued {
  certPem: string;
  /** Lowercase hex without separators. */
  serial: string;
  notAfter: Date;
  fingerprint: string;
  chainPem: string[];
}

/** SHA-256 of the DER certificate, lowercase hex. */
export function fingerprintOf(cert: x509.X509Certificate | string): string {
  const c = typeof cert === 'string' ? new x509.X509Certificate(cert) : cert;
  return createHash('sha256').update(Buffer.from(c.rawData)).digest('hex');
}

/** SPKI DER of a certificate's or request's public key. */
export function spkiOf(obj: { publicKey: x509.PublicKey }): Buffer {
  return Buffer.from(obj.publicKey.rawData);
}

/** A PKCS#10 request (PEM or base64 DER) whose signature verifies and whose key is P-256. */
export async function parseCsr(text: string, field = 'csr'): Promise<x509.Pkcs10CertificateRequest> {
  let csr: x509.Pkcs10CertificateRequest;
  let spki: Buffer;
  try {
    csr = new x509.Pkcs10CertificateRequest(text.includes('-----BEGIN') ? text : Buffer.from(text, 'base64'));
    // The key is decoded on first use: malformed EC parameters are "not a request" here, not a throw
    // later (found by test/fuzz/targets/key-vault.ts: an OID turned the curve name into SpecifiedECDomain).
    spki = spkiOf(csr);
  } catch {
    throw invalid(`${field} is not a PKCS#10 certificate request`, [{ path: field, message: 'PKCS#10 (PEM or base64 DER) expected' }]);
  }
  await requireP256(spki, field);
  let ok = false;
  try {
    ok = await csr.verify();
  } catch {
    /* unsupported signature algorithm */
  }
  if (!ok)
    throw invalid(`${field}: the request is not signed by the key it names`, [{ path: field, message: 'signature does not verify' }]);
  return csr;
}

/** Throws api-106 unless `spki` is an EC P-256 public key. */
export async function requireP256(spki: Buffer, field: string): Promise<void> {
  try {
    await webcrypto.subtle.importKey('spki', spki, P256, true, ['verify']);
  } catch {
    throw invalid(`${field}: the public key must be EC P-256`, [{ path: field, message: 'EC P-256 public key expected' }]);
  }
}

/** The rfc822Name entries of a certificate's subjectAltName, lowercased. */
export function emailsOf(cert: x509.X509Certificate): string[] {
  const san = cert.getExtension(x509.SubjectAlternativeNameExtension);
  return (san?.names.items ?? []).filter((n) => n.type === 'email').map((n) => n.value.toLowerCase());
}

/** Key usage and EKU of each kind (OpenSSL's smimeencrypt purpose wants keyEncipherment too). */
export function usagesOf(kind: CertKind): { ku: number; eku: string[] } {
  return kind === 'encryption'
    ? { ku: x509.KeyUsageFlags.keyAgreement | x509.KeyUsageFlags.keyEncipherment, eku: [OID_EMAIL_PROTECTION] }
    : { ku: x509.KeyUsageFlags.digitalSignature | x509.KeyUsageFlags.nonRepudiation, eku: [OID_EMAIL_PROTECTION] };
}

export function toIssued(cert: x509.X509Certificate, chainPem: string[]): Issued {
  return {
    certPem: cert.toString('pem') + '\n',
    serial: cert.serialNumber.toLowerCase(),
    notAfter: cert.notAfter,
    fingerprint: fingerprintOf(cert),
    chainPem,
  };
}

export { x509 };

/** Spec: Versioning, encryption certificate backends (mail:pki:backend). */
export interface PkiBackend {
  readonly name: 'local' | 'vault';
  issue(req: IssueRequest): Promise<Issued>;
  revoke(serial: string): Promise<void>;
  /** The issuing CA certificates (PEM), for clients that check the chain. */
  caCertificates(): Promise<string[]>;
}
