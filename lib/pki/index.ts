// lib/pki: the local CA, DKIM keys, and the certificate backends (local, vault).
export { ensureLocalCa, loadLocalCa, randomSerial, CA_CERT_FILE, CA_KEY_FILE, type LocalCa } from './ca.js';
export { generateDkimKey, type DkimKey } from './dkim.js';
export { pkiBackend, localCaDir, type PkiBackend } from './backend.js';
export { LocalPki } from './local.js';
export { VaultPki, type VaultOptions } from './vault.js';
export {
  parseCsr,
  requireP256,
  fingerprintOf,
  spkiOf,
  emailsOf,
  OID_EMAIL_PROTECTION,
  type CertKind,
  type Issued,
  type IssueRequest,
} from './certs.js';
export { IssuedCertificateModel, recordIssued, revokeCertificate, isRevoked, type IssuedCertificate } from './records.js';
