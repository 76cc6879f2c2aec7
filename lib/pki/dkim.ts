import { generateKeyPair } from 'node:crypto';
import { promisify } from 'node:util';

const generate = promisify(generateKeyPair);

export interface DkimKey {
  privateKeyPem: string;
  publicKeyDer: Buffer;
  /** The TXT record value for <selector>._domainkey.<domain>. */
  dnsTxt: string;
  /** Same as privateKeyPem (PKCS#8 PEM). */
  privateKey: string;
  /** SPKI PEM of the public key. */
  publicKey: string;
}

/** A 2048-bit RSA DKIM key pair (spec: Limits, DKIM key). */
export async function generateDkimKey(): Promise<DkimKey> {
  const { privateKey, publicKey } = await generate('rsa', { modulusLength: 2048, publicExponent: 0x10001 });
  const privateKeyPem = privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const publicKeyDer = publicKey.export({ type: 'spki', format: 'der' });
  const publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
  return {
    privateKeyPem,
    publicKeyDer,
    dnsTxt: `v=DKIM1; k=rsa; p=${publicKeyDer.toString('base64')}`,
    privateKey: privateKeyPem,
    publicKey: publicPem,
  };
}
