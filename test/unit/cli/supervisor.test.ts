// Which commands each supervision action runs, as a table (the systemd and pm2 command lines).
import { describe, expect, it } from 'vitest';
import { ECOSYSTEM, detectManager, parsePm2List, parseSystemctlShow, plan } from '../../../cli/supervisor.js';

describe('supervision plans', () => {
  it.each([
    ['start', undefined, ['systemctl', 'start', 'svcmail.target']],
    ['stop', 'api', ['systemctl', 'stop', 'svcmail-api.service']],
    ['restart', 'worker', ['systemctl', 'restart', 'svcmail-worker.service']],
    ['logs', 'push', ['journalctl', '-u', 'svcmail-push.service', '-n', '100', '--no-pager']],
  ] as const)('systemd %s %s', (action, daemon, want) => {
    const [inv] = plan('systemd', action, daemon);
    expect([inv.cmd, ...inv.args]).toEqual(want);
  });

  it('systemd status asks every unit; logs of all follow every unit', () => {
    expect(plan('systemd', 'status').map((i) => i.args[1])).toEqual([
      'svcmail-api.service',
      'svcmail-worker.service',
      'svcmail-push.service',
      'svcmail-protocols.service',
    ]);
    expect(plan('systemd', 'logs', undefined, { follow: true, lines: 5 })[0].args).toEqual([
      '-u',
      'svcmail-api.service',
      '-u',
      'svcmail-worker.service',
      '-u',
      'svcmail-push.service',
      '-u',
      'svcmail-protocols.service',
      '-n',
      '5',
      '--no-pager',
      '-f',
    ]);
  });

  it.each([
    ['start', 'api', ['pm2', 'start', ECOSYSTEM, '--only', 'svcmail-api']],
    ['stop', undefined, ['pm2', 'stop', ECOSYSTEM]],
    ['restart', 'protocols', ['pm2', 'restart', ECOSYSTEM, '--only', 'svcmail-protocols']],
    ['status', undefined, ['pm2', 'jlist']],
  ] as const)('pm2 %s %s', (action, daemon, want) => {
    const [inv] = plan('pm2', action, daemon);
    expect([inv.cmd, ...inv.args]).toEqual(want);
  });

  it('the ecosystem file is the packaged one and lists the four daemons', async () => {
    const eco = (await import(ECOSYSTEM)) as { default: { apps: Array<{ name: string; script: string }> } };
    expect(eco.default.apps.map((a) => a.name)).toEqual(['svcmail-api', 'svcmail-worker', 'svcmail-push', 'svcmail-protocols']);
    expect(eco.default.apps[0].script).toMatch(/bin\/svcmail-api\.js$/);
  });

  it('parses systemctl show and pm2 jlist', () => {
    expect(
      parseSystemctlShow(
        'api',
        'Id=svcmail-api.service\nActiveState=active\nSubState=running\nMainPID=42\nStatusText=listening on 127.0.0.1:8080\n',
      ),
    ).toEqual({ daemon: 'api', state: 'active/running', pid: 42, detail: 'listening on 127.0.0.1:8080' });
    expect(parsePm2List('[{"name":"svcmail-api","pid":7,"pm2_env":{"status":"online","restart_time":2}}]', ['api', 'push'])).toEqual([
      { daemon: 'api', state: 'online', pid: 7, detail: 'restarts 2' },
      { daemon: 'push', state: 'not started', pid: null, detail: '' },
    ]);
  });

  it('SVCMAIL_SUPERVISOR forces the manager', () => {
    expect(detectManager({ SVCMAIL_SUPERVISOR: 'pm2' })).toBe('pm2');
    expect(detectManager({ SVCMAIL_SUPERVISOR: 'none' })).toBe('none');
  });
});
