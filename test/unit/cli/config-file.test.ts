// The configuration file setup writes: 0640, owned by the svcmail user when root runs it, rewritten only when it changes.
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { SettingName } from '../../../lib/config/index.js';
import { readConfigFile, systemUser, writeConfigFile } from '../../../lib/setup/index.js';

describe('setup configuration file', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-conffile-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const passwd = join(dir, 'passwd');
  writeFileSync(passwd, 'root:x:0:0:root:/root:/bin/bash\nsvcmail:x:4321:4322:svcmail daemons:/var/lib/svcmail:/usr/sbin/nologin\n');

  it('finds the service user in a passwd file', () => {
    expect(systemUser('svcmail', passwd)).toEqual({ uid: 4321, gid: 4322 });
    expect(systemUser('nobody-here', passwd)).toBeNull();
  });

  it('writes sorted JSON, mode 0640, owned by the service user when root; an identical rewrite is a no-op', () => {
    const file = join(dir, 'svcmail.conf');
    const values = new Map<SettingName, unknown>([
      ['mail:host', 'mail.example.test'],
      ['data_dir', '/var/lib/svcmail'],
    ]);
    expect(writeConfigFile(file, values, passwd)).toBe(true);
    const st = statSync(file);
    expect((st.mode & 0o777).toString(8)).toBe('640');
    if (process.getuid?.() === 0) expect([st.uid, st.gid]).toEqual([4321, 4322]);
    expect(Object.keys(JSON.parse(readFileSync(file, 'utf8')))).toEqual(['data_dir', 'mail:host']);
    const mtime = statSync(file).mtimeMs;
    expect(writeConfigFile(file, new Map([...values].reverse()), passwd)).toBe(false);
    expect(statSync(file).mtimeMs).toBe(mtime);
    expect(readConfigFile(file).get('mail:host')).toBe('mail.example.test');
  });
});
