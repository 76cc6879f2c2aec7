import * as x509 from '@peculiar/x509';
import { emailsOf, fingerprintOf, OID_EMAIL_PROTECTION, requireP256, spkiOf } from '../pki/index.js';

/**
 * Checks a certificate found for `address` (from another server): it parses, holds a P-256 key,
 * names the address, is for email protection and key agreement and is valid now. Returns its
 * fingerprint, or a reason.
 */
export async function checkFoundCertificate(
  pemText: string,
  address: string,
  now = new Date(),
): Promise<{ ok: true; fingerprint: string; pem: string } | { ok: false; reason: string }> {
  let cert: x509.X509Certificate;
  try {
    cert = new x509.X509Certificate(pemText);
    // Extensions are decoded on first use: a malformed one is "not a certificate" here, not a throw
    // from the checks below (found by test/fuzz/targets/key-vault.ts).
    void cert.extensions;
  } catch {
    return { ok: false, reason: 'not a certificate' };
  }
  try {
    await requireP256(spkiOf(cert), 'certificate');
  } catch {
    return { ok: false, reason: 'not a P-256 key' };
  }
  if (!emailsOf(cert).includes(address.toLowerCase())) return { ok: false, reason: 'the certificate does not name the address' };
  if (cert.notBefore > new Date(now.getTime() + 300_000) || cert.notAfter < now)
    return { ok: false, reason: 'the certificate is not valid now' };
  const ku = cert.getExtension(x509.KeyUsagesExtension);
  if (ku && !(ku.usages & x509.KeyUsageFlags.keyAgreement)) return { ok: false, reason: 'the certificate is not for key agreement' };
  const eku = cert.getExtension(x509.ExtendedKeyUsageExtension);
  if (eku && !eku.usages.map(String).includes(OID_EMAIL_PROTECTION))
    return { ok: false, reason: 'the certificate is not for email protection' };
  const basic = cert.getExtension(x509.BasicConstraintsExtension);
  if (basic?.ca) return { ok: false, reason: 'a CA certificate' };
  return { ok: true, fingerprint: fingerprintOf(cert), pem: cert.toString('pem') + '\n' };
}
