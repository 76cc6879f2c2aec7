import { KeyObject } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { CA_CERT_FILE, ensureLocalCa, generateDkimKey } from '../pki/index.js';

/** The local P-256 CA (lib/pki makes it idempotently, with safe modes; rotate renames the old files). */
export async function ensureCa(dir: string, rotate: boolean): Promise<'created' | 'kept' | 'rotated'> {
  const had = existsSync(join(dir, CA_CERT_FILE));
  const { created } = await ensureLocalCa(dir, { rotate });
  return !created ? 'kept' : had ? 'rotated' : 'created';
}

const pem = (k: unknown, kind: 'private' | 'public'): string => {
  if (typeof k === 'string') return k;
  if (k instanceof KeyObject)
    return kind === 'private'
      ? k.export({ type: 'pkcs8', format: 'pem' }).toString()
      : k.export({ type: 'spki', format: 'pem' }).toString();
  throw new Error('unexpected DKIM key format from lib/pki');
};

/** A domain's DKIM key pair: the private key 0600, the public key 0644. Kept unless rotating. */
export async function ensureDkimKey(files: { key: string; pub: string }, rotate: boolean): Promise<'created' | 'kept' | 'rotated'> {
  const had = existsSync(files.key) && existsSync(files.pub);
  if (had && !rotate) return 'kept';
  mkdirSync(dirname(files.key), { recursive: true, mode: 0o750 });
  const pair = (await generateDkimKey()) as { privateKey: unknown; publicKey: unknown };
  if (had) {
    const stamp = Date.now();
    renameSync(files.key, `${files.key}.rotated-${stamp}`);
    renameSync(files.pub, `${files.pub}.rotated-${stamp}`);
  }
  writeFileSync(files.key, pem(pair.privateKey, 'private'), { mode: 0o600 });
  chmodSync(files.key, 0o600);
  writeFileSync(files.pub, pem(pair.publicKey, 'public'), { mode: 0o644 });
  return had ? 'rotated' : 'created';
}
