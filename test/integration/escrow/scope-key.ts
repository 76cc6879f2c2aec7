// The escrow scope's key pair as the holders make it themselves (here with OpenSSL: P-256, 30 days);
// the server only ever sees the certificate.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function scopeKeyPair(cn = 'Legal hold scope'): { certPem: string; keyPem: string } {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-scope-'));
  const files = ['-keyout', join(dir, 'k'), '-out', join(dir, 'c')];
  execFileSync(
    'openssl',
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-subj', `/CN=${cn}`, ...files, '-days', '30'],
    {
      stdio: 'ignore',
    },
  );
  return { certPem: readFileSync(join(dir, 'c'), 'utf8'), keyPem: readFileSync(join(dir, 'k'), 'utf8') };
}
