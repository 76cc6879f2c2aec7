// The systemd units: systemd-analyze verify accepts them, and they ask for what the design card says.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { DAEMON_NODE_ARGS } from '../../../cli/daemons.js';
import { writeManPages } from '../../../cli/man/index.js';
import { requirePrograms } from '../../helpers/peers.js';
import { ROOT } from './helpers.js';

const withSystemd = requirePrograms('systemd-analyze');
const DAEMONS = ['api', 'worker', 'push', 'protocols'];
const units = [join(ROOT, 'systemd/svcmail.target'), ...DAEMONS.map((d) => join(ROOT, `systemd/svcmail-${d}.service`))];

describe('systemd units', () => {
  const man = mkdtempSync(join(tmpdir(), 'svcmail-units-man-'));
  afterAll(() => rmSync(man, { recursive: true, force: true }));

  it.runIf(withSystemd)('pass systemd-analyze verify (with the generated man pages the units cite)', () => {
    writeManPages(man);
    const r = spawnSync('systemd-analyze', ['verify', ...units], { encoding: 'utf8', env: { ...process.env, MANPATH: man } });
    expect(r.stderr.trim(), r.stderr).toBe('');
    expect(r.status).toBe(0);
  });

  it.each(DAEMONS)('svcmail-%s.service is Type=notify with a watchdog, a dedicated user and sandboxing', (d) => {
    const text = readFileSync(join(ROOT, `systemd/svcmail-${d}.service`), 'utf8');
    for (const line of [
      'Type=notify',
      'User=svcmail',
      'StateDirectory=svcmail',
      'ConfigurationDirectory=svcmail',
      'NoNewPrivileges=yes',
      'ProtectSystem=strict',
      'PartOf=svcmail.target',
      'RestartPreventExitStatus=78',
    ]) {
      expect(text).toContain(line);
    }
    expect(text).toMatch(/^WatchdogSec=\d+s$/m);
    expect(text).toContain(
      `ExecStart=/usr/bin/node ${DAEMON_NODE_ARGS.join(' ')} /usr/lib/svcmail/bin/svcmail-${d}.js --config /etc/svcmail/svcmail.conf`,
    );
    expect(readFileSync(join(ROOT, 'systemd/svcmail.target'), 'utf8')).toContain(`svcmail-${d}.service`);
  });
});
