import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * A P-256 self-signed certificate for 127.0.0.1 made by openssl (a test must first ask for the
 * peer: requirePrograms('openssl')), valid one day: `cert` and `key` files in `dir`. Pass the
 * certificate as NODE_EXTRA_CA_CERTS to a child that must trust it.
 */
export function selfSignedCert(dir: string): { cert: string; key: string } {
  const cert = join(dir, 'cert.pem');
  const key = join(dir, 'key.pem');
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-days', '1'].concat([
      '-subj',
      '/CN=127.0.0.1',
      '-addext',
      'subjectAltName=IP:127.0.0.1',
      '-keyout',
      key,
      '-out',
      cert,
    ]),
    { stdio: 'ignore' },
  );
  return { cert, key };
}
