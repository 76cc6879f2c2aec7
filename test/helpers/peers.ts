// The peers: programs and services beside Node that some tests talk to (the Debian packages of
// .ci/apt-packages, PostgreSQL and Redis on 127.0.0.1, pm2). Every test that needs one asks here.
// Outside CI a missing peer skips what needs it, and the file says so in one line naming the peer
// and the fix; in CI (CI=true, where .ci/run has installed everything) a missing peer is a failure.
// `.ci/peers` installs and starts them; `.ci/peers --check` lists what this host has.
//
// SVCMAIL_TEST_HIDE_PEERS=rspamd,postgres makes the named peers look missing, to try the skips.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { relative } from 'node:path';
import { expect } from 'vitest';
import { onPath } from '../../cli/supervisor.js';

export const PEERS_FIX = 'run: sudo npm run peers';

const first =
  (...paths: string[]) =>
  () =>
    paths.find((p) => existsSync(p));
const all =
  (...paths: string[]) =>
  () =>
    paths.every((p) => existsSync(p)) ? paths[0] : undefined;
const onPathOrUndefined = (cmd: string) => () => onPath(cmd) ?? undefined;
const PY = '/usr/bin/python3';

/** The programs, how to find each (its path; tests call some by absolute path), and what installs it. */
const PROGRAMS = {
  rspamd: { find: first('/usr/bin/rspamd'), pkg: 'rspamd' },
  clamd: { find: first('/usr/sbin/clamd'), pkg: 'clamav-daemon' },
  postfix: { find: all('/usr/sbin/postfix', '/usr/sbin/sendmail', '/usr/sbin/smtp-sink', '/usr/sbin/smtp-source'), pkg: 'postfix' },
  chromium: { find: first('/usr/bin/chromium'), pkg: 'chromium' },
  nginx: { find: first('/usr/sbin/nginx', '/usr/bin/nginx'), pkg: 'nginx-light' },
  xmllint: { find: first('/usr/bin/xmllint', '/bin/xmllint'), pkg: 'libxml2-utils' },
  'python3-exchangelib': {
    find: () =>
      existsSync(PY) && spawnSync(PY, ['-c', 'import exchangelib.autodiscover.properties'], { stdio: 'ignore' }).status === 0
        ? PY
        : undefined,
    pkg: 'python3-exchangelib',
  },
  openssl: { find: onPathOrUndefined('openssl'), pkg: 'openssl' },
  'systemd-analyze': { find: onPathOrUndefined('systemd-analyze'), pkg: 'systemd' },
  groff: { find: onPathOrUndefined('groff'), pkg: 'groff-base' },
  man: { find: onPathOrUndefined('man'), pkg: 'man-db' },
  tmux: { find: onPathOrUndefined('tmux'), pkg: 'tmux' },
  fakeroot: { find: onPathOrUndefined('fakeroot'), pkg: 'fakeroot' },
  'dpkg-deb': { find: onPathOrUndefined('dpkg-deb'), pkg: 'dpkg' },
  'redis-server': { find: first('/usr/bin/redis-server'), pkg: 'redis-server' },
  wbxml2xml: { find: first('/usr/bin/wbxml2xml'), pkg: 'libwbxml2-utils' },
  // The PHP CLI and Horde's ActiveSync WBXML decoder (php-cli is a separate package).
  'php-horde-activesync': { find: all('/usr/bin/php', '/usr/share/php/Horde/ActiveSync/Wbxml/Decoder.php'), pkg: 'php-horde-activesync' },
  pm2: { find: onPathOrUndefined('pm2'), pkg: null },
} satisfies Record<string, { find: () => string | undefined; pkg: string | null }>;

export type Program = keyof typeof PROGRAMS;

function hidden(name: string): boolean {
  return (process.env.SVCMAIL_TEST_HIDE_PEERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .includes(name);
}

/** Where the program is, or undefined when it is not installed (or hidden). Reports nothing. */
export function programPath(name: Program): string | undefined {
  return hidden(name) ? undefined : PROGRAMS[name].find();
}

const said = new Set<string>();

function testFile(): string {
  try {
    const path = expect.getState().testPath;
    if (path) return relative(process.cwd(), path);
  } catch {
    /* outside vitest (the fuzz runner) */
  }
  return process.argv[1] ?? 'this run';
}

/**
 * Whether the peer is there. When it is not: in CI this throws, which fails the file; elsewhere
 * the file prints one line (once per peer) naming the peer, why (a phrase such as "not installed")
 * and the fix, and the caller skips what needs it (describe.runIf / it.runIf with the result).
 */
export function requirePeer(name: string, available: boolean, why = 'not installed', fix = PEERS_FIX): boolean {
  if (available && !hidden(name)) return true;
  if (hidden(name)) why = 'hidden by SVCMAIL_TEST_HIDE_PEERS';
  if (process.env.CI === 'true')
    throw new Error(`${name} ${name.includes(', ') ? 'are' : 'is'} required in CI (CI=true) but ${why} — ${fix}`);
  if (!said.has(name)) {
    said.add(name);
    process.stdout.write(`skipped in ${testFile()}: ${name} ${why} — ${fix}\n`);
  }
  return false;
}

/** Whether every named program is installed; one line (or, in CI, one error) for all that are not. */
export function requirePrograms(...names: Program[]): boolean {
  const missing = names.filter((n) => !programPath(n));
  if (missing.length === 0) return true;
  const pkgs = missing.map((n) => PROGRAMS[n].pkg).filter((p): p is string => p !== null);
  const why = missing.every(hidden)
    ? 'hidden by SVCMAIL_TEST_HIDE_PEERS'
    : `not installed${pkgs.length ? ` (Debian ${pkgs.length > 1 ? 'packages' : 'package'} ${pkgs.join(', ')})` : ''}`;
  return requirePeer(missing.join(', '), false, why, missing.includes('pm2') ? `${PEERS_FIX} (or npm install -g pm2@6)` : PEERS_FIX);
}

/** Whether the tests run as root, which `what` needs; one line and a skip when not, or in CI a failure. */
export function requireRoot(what: string): boolean {
  const uid = process.getuid?.() ?? -1;
  return requirePeer('root', uid === 0, `not the user (uid ${uid}); ${what} needs it`, 'run the tests as root');
}
