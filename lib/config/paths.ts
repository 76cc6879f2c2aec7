// Files and names derived from the settings: where the local CA and the DKIM keys live, the host name in force.
import { join, resolve } from 'node:path';
import type { Config } from './load.js';

/** Where the local CA lives: mail:pki:local_ca:dir, else <data_dir>/pki/ca. */
export function caDir(config: Config): string {
  return resolve(config.get('mail:pki:local_ca:dir') || join(config.get('data_dir'), 'pki', 'ca'));
}

export function dkimDir(config: Config): string {
  return resolve(config.get('mail:dkim:dir') || join(config.get('data_dir'), 'dkim'));
}

/** The private (0600) and public PEM files of a domain's DKIM key. */
export function dkimKeyFiles(config: Config, domain: string, selector = config.get('mail:dkim:selector')): { key: string; pub: string } {
  const base = join(dkimDir(config), `${domain}.${selector}`);
  return { key: `${base}.key`, pub: `${base}.pub` };
}

/** The host name in force: mail:host, else the host of mail:base_url. */
export function publicHost(config: Config): string {
  const host = config.get('mail:host');
  if (host) return host;
  const base = config.get('mail:base_url');
  return base ? new URL(base).hostname : '';
}
