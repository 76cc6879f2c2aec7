import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import type { PkiBackend } from './certs.js';
import { LocalPki } from './local.js';
import { VaultPki } from './vault.js';

export type { PkiBackend } from './certs.js';

export function localCaDir(config: Config): string {
  return resolve(config.get('mail:pki:local_ca:dir') || join(config.get('data_dir'), 'pki', 'ca'));
}

const cache = new WeakMap<Config, PkiBackend>();

/** The configured backend, one per configuration (the local CA key is read once). */
export function pkiBackend(config: Config): PkiBackend {
  let b = cache.get(config);
  if (!b) {
    b =
      config.get('mail:pki:backend') === 'vault'
        ? new VaultPki({
            addr: config.get('mail:pki:vault:addr'),
            token: config.get('mail:pki:vault:token'),
            namespace: config.get('mail:pki:vault:namespace'),
            mount: config.get('mail:pki:vault:mount'),
            role: config.get('mail:pki:vault:role'),
            ttl: config.get('mail:pki:vault:ttl'),
            timeoutMs: config.get('mail:pki:vault:timeout_ms'),
          })
        : new LocalPki(localCaDir(config), config.get('mail:pki:cert_days'));
    cache.set(config, b);
  }
  return b;
}
