import { argon2id } from 'hash-wasm';
import { fromB64 } from './bytes.js';
import type { Argon2Params } from './format.js';

// The password key of a vault's password wrap: Argon2id in WASM (hash-wasm). On its own so a browser's
// Web Worker loads only this (and the page stays responsive while it runs).

export async function argon2Key(password: string, p: Argon2Params): Promise<Uint8Array> {
  return argon2id({
    password: password.normalize('NFC'),
    salt: fromB64(p.salt),
    memorySize: p.memoryKiB,
    iterations: p.iterations,
    parallelism: p.parallelism,
    hashLength: 32,
    outputType: 'binary',
  });
}
