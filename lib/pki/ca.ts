import { webcrypto } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';

// The local P-256 CA (spec: Versioning, PKI backends `local`). Files: <dir>/ca.crt and
// <dir>/ca.key (PKCS#8 PEM, mode 0600); the directory is 0700.

x509.cryptoProvider.set(webcrypto as unknown as Parameters<typeof x509.cryptoProvider.set>[0]);

type CryptoKey = webcrypto.CryptoKey;
type CryptoKeyPair = webcrypto.CryptoKeyPair;

export const CA_CERT_FILE = 'ca.crt';
export const CA_KEY_FILE = 'ca.key';
const EC_ALG = { name: 'ECDSA', namedCurve: 'P-256' } as const;
const SIGN_ALG = { name: 'ECDSA', hash: 'SHA-256' } as const;
const CA_YEARS = 10;

export interface LocalCa {
  certPem: string;
  cert: x509.X509Certificate;
  privateKey: CryptoKey;
}

function pemKey(der: ArrayBuffer): string {
  return x509.PemConverter.encode(der, 'PRIVATE KEY');
}

function writeSecret(path: string, text: string, mode: number): void {
  const tmp = `${path}.tmp-${process.pid}-${Date.now()}`;
  writeFileSync(tmp, text, { mode });
  chmodSync(tmp, mode);
  renameSync(tmp, path);
}

/** A random positive serial number of 16 bytes (hex). */
export function randomSerial(): string {
  const b = webcrypto.getRandomValues(new Uint8Array(16));
  b[0] = (b[0]! & 0x7f) | 0x01;
  return Buffer.from(b).toString('hex');
}

/**
 * Makes the self-signed P-256 CA in `dir` unless one is there. Idempotent: an existing CA is kept
 * unless `rotate` is set, in which case the old files are renamed to *.rotated-<ms>.
 */
export async function ensureLocalCa(
  dir: string,
  opts: { rotate?: boolean; commonName?: string } = {},
): Promise<{ certPem: string; created: boolean }> {
  const certFile = join(dir, CA_CERT_FILE);
  const keyFile = join(dir, CA_KEY_FILE);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
  const had = existsSync(certFile) && existsSync(keyFile);
  if (had && !opts.rotate) {
    chmodSync(keyFile, 0o600);
    return { certPem: readFileSync(certFile, 'utf8'), created: false };
  }
  const keys = (await webcrypto.subtle.generateKey(EC_ALG, true, ['sign', 'verify'])) as CryptoKeyPair;
  const now = new Date();
  const notBefore = new Date(now.getTime() - 60_000);
  const notAfter = new Date(now);
  notAfter.setUTCFullYear(notAfter.getUTCFullYear() + CA_YEARS);
  const cert = await x509.X509CertificateGenerator.createSelfSigned({
    serialNumber: randomSerial(),
    name: `CN=${(opts.commonName ?? 'svcmail local CA').replace(/[,=+<>#;"\\]/g, ' ')}`,
    notBefore,
    notAfter,
    signingAlgorithm: SIGN_ALG,
    keys,
    extensions: [
      new x509.BasicConstraintsExtension(true, 0, true),
      new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign | x509.KeyUsageFlags.digitalSignature, true),
      await x509.SubjectKeyIdentifierExtension.create(keys.publicKey),
    ],
  });
  const certPem = cert.toString('pem') + '\n';
  const keyPem = pemKey(await webcrypto.subtle.exportKey('pkcs8', keys.privateKey)) + '\n';
  if (had) {
    const stamp = Date.now();
    renameSync(certFile, `${certFile}.rotated-${stamp}`);
    renameSync(keyFile, `${keyFile}.rotated-${stamp}`);
  }
  writeSecret(keyFile, keyPem, 0o600);
  writeSecret(certFile, certPem, 0o644);
  return { certPem, created: true };
}

/** Loads the CA certificate and its signing key from `dir` (made by ensureLocalCa). */
export async function loadLocalCa(dir: string): Promise<LocalCa> {
  const certPem = readFileSync(join(dir, CA_CERT_FILE), 'utf8');
  const keyPem = readFileSync(join(dir, CA_KEY_FILE), 'utf8');
  const cert = new x509.X509Certificate(certPem);
  const privateKey = await webcrypto.subtle.importKey('pkcs8', x509.PemConverter.decode(keyPem)[0]!, EC_ALG, false, ['sign']);
  return { certPem, cert, privateKey };
}
