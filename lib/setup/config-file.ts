import { chmodSync, chownSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { flatten } from '../config/index.js';
import type { SettingName } from '../config/index.js';

/** The settings a configuration file holds, by name (nested or flat JSON both read). */
export function readConfigFile(file: string): Map<SettingName, unknown> {
  if (!existsSync(file)) return new Map();
  return flatten(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>, file);
}

/** uid and gid of a system user, from /etc/passwd (null when it does not exist). */
export function systemUser(name: string, passwd = '/etc/passwd'): { uid: number; gid: number } | null {
  if (!existsSync(passwd)) return null;
  for (const line of readFileSync(passwd, 'utf8').split('\n')) {
    const f = line.split(':');
    if (f[0] === name && f.length >= 4) return { uid: Number(f[2]), gid: Number(f[3]) };
  }
  return null;
}

export const SERVICE_USER = 'svcmail';

/** Same file content as a sorted flat object; written atomically, mode 0640. */
export function renderConfig(values: Map<SettingName, unknown>): string {
  const sorted = Object.fromEntries([...values].sort(([a], [b]) => a.localeCompare(b)));
  return `${JSON.stringify(sorted, null, 2)}\n`;
}

/**
 * Writes the configuration (mode 0640; owned by the svcmail user when root runs it and the user exists,
 * so the daemons can read it). Returns false when the file already held exactly this.
 */
export function writeConfigFile(file: string, values: Map<SettingName, unknown>, passwd = '/etc/passwd'): boolean {
  const text = renderConfig(values);
  const user = process.getuid?.() === 0 ? systemUser(SERVICE_USER, passwd) : null;
  if (existsSync(file) && readFileSync(file, 'utf8') === text) {
    chmodSync(file, 0o640);
    if (user) chownSync(file, user.uid, user.gid);
    return false;
  }
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o640 });
  chmodSync(tmp, 0o640);
  if (user) chownSync(tmp, user.uid, user.gid);
  renameSync(tmp, file);
  return true;
}
