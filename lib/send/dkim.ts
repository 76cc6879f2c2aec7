import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import DKIM from 'nodemailer/lib/dkim/index.js';
import type { Config } from '../config/index.js';

/** Where `svcmail setup` keeps a domain's DKIM key: <mail:dkim:dir>/<domain>.<selector>.key. */
export function dkimKeyPath(config: Config, domain: string): string {
  const dir = config.get('mail:dkim:dir') || join(resolve(config.get('data_dir')), 'dkim');
  return join(dir, `${domain.toLowerCase()}.${config.get('mail:dkim:selector')}.key`);
}

const keyCache = new Map<string, Promise<string | null>>();

async function keyFor(config: Config, domain: string): Promise<string | null> {
  const path = dkimKeyPath(config, domain);
  let p = keyCache.get(path);
  if (!p) {
    p = readFile(path, 'utf8').catch((e: NodeJS.ErrnoException) => {
      keyCache.delete(path);
      if (e.code === 'ENOENT') return null;
      throw e;
    });
    keyCache.set(path, p);
  }
  return p;
}

/** True when `svcmail setup` (or an administrator) placed a DKIM key for the domain. */
export async function hasDkimKey(config: Config, domain: string): Promise<boolean> {
  return (await keyFor(config, domain)) !== null;
}

function collect(stream: NodeJS.ReadableStream): Promise<Buffer> {
  return new Promise((res, rej) => {
    const parts: Buffer[] = [];
    stream.on('data', (c: Buffer) => parts.push(c));
    stream.on('end', () => res(Buffer.concat(parts)));
    stream.on('error', rej);
  });
}

/**
 * DKIM-signs a message the service itself originates (DSNs, out-of-office, receipts, ACME replies,
 * list notices) with the domain's key (Spec: Limits — 2048-bit RSA, selector default mail). Without
 * a key for the domain the message goes unsigned and `signed` says so; svcmail doctor reports it.
 */
export async function dkimSign(config: Config, raw: Buffer, domain: string): Promise<{ raw: Buffer; signed: boolean }> {
  const privateKey = await keyFor(config, domain);
  if (!privateKey) return { raw, signed: false };
  const signer = new DKIM({
    domainName: domain.toLowerCase(),
    keySelector: config.get('mail:dkim:selector'),
    privateKey,
    hashAlgo: 'sha256',
  });
  return { raw: await collect(signer.sign(raw)), signed: true };
}
