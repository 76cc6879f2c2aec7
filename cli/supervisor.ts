// Which service manager drives the daemons, and the exact commands for each action. systemd when it
// runs as the system manager (sd_booted: /run/systemd/system exists); pm2 otherwise when installed —
// always run as a separate program, never imported (it is AGPL); else only --foreground.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export type Manager = 'systemd' | 'pm2' | 'none';
export type Action = 'start' | 'stop' | 'restart' | 'status' | 'logs';

export const ALL_DAEMONS = ['api', 'worker', 'push', 'protocols'] as const;

export const ECOSYSTEM = fileURLToPath(
  new URL('../packaging/pm2/ecosystem.config.cjs', import.meta.url).href.replace('/dist/packaging/', '/packaging/'),
);

export function onPath(cmd: string, path = process.env.PATH ?? ''): string | null {
  for (const dir of path.split(delimiter)) {
    const full = join(dir, cmd);
    if (dir && existsSync(full)) return full;
  }
  return null;
}

/** SVCMAIL_SUPERVISOR forces one (systemd, pm2, none); else what this host runs. */
export function detectManager(env: NodeJS.ProcessEnv = process.env): Manager {
  const forced = env.SVCMAIL_SUPERVISOR;
  if (forced === 'systemd' || forced === 'pm2' || forced === 'none') return forced;
  if (existsSync('/run/systemd/system') && onPath('systemctl')) return 'systemd';
  if (onPath('pm2')) return 'pm2';
  return 'none';
}

export const unitOf = (daemon?: string) => (daemon ? `svcmail-${daemon}.service` : 'svcmail.target');
export const unitsOf = (daemon?: string) => (daemon ? [unitOf(daemon)] : ALL_DAEMONS.map((d) => unitOf(d)));
export const pm2Name = (daemon: string) => `svcmail-${daemon}`;

export interface Invocation {
  cmd: string;
  args: string[];
}

/** The command lines an action runs under a manager (pure, so the mapping is tested as a table). */
export function plan(
  manager: Exclude<Manager, 'none'>,
  action: Action,
  daemon?: string,
  opts: { follow?: boolean; lines?: number } = {},
): Invocation[] {
  const lines = String(opts.lines ?? 100);
  if (manager === 'systemd') {
    switch (action) {
      case 'start':
      case 'stop':
      case 'restart':
        return [{ cmd: 'systemctl', args: [action, unitOf(daemon)] }];
      case 'status':
        return unitsOf(daemon).map((u) => ({
          cmd: 'systemctl',
          args: ['show', u, '--property=Id,ActiveState,SubState,MainPID,StatusText,ActiveEnterTimestamp'],
        }));
      case 'logs':
        return [
          {
            cmd: 'journalctl',
            args: [...unitsOf(daemon).flatMap((u) => ['-u', u]), '-n', lines, '--no-pager', ...(opts.follow ? ['-f'] : [])],
          },
        ];
    }
  }
  const only = daemon ? ['--only', pm2Name(daemon)] : [];
  switch (action) {
    case 'start':
      return [{ cmd: 'pm2', args: ['start', ECOSYSTEM, ...only] }];
    case 'stop':
      return [{ cmd: 'pm2', args: ['stop', ECOSYSTEM, ...only] }];
    case 'restart':
      return [{ cmd: 'pm2', args: ['restart', ECOSYSTEM, ...only] }];
    case 'status':
      return [{ cmd: 'pm2', args: ['jlist'] }];
    case 'logs':
      return [
        {
          cmd: 'pm2',
          args: ['logs', ...(daemon ? [pm2Name(daemon)] : ['/svcmail-/']), '--lines', lines, ...(opts.follow ? [] : ['--nostream'])],
        },
      ];
  }
}

export interface DaemonStatus {
  daemon: string;
  state: string;
  pid: number | null;
  detail: string;
}

/** `systemctl show` output (Key=Value lines) → a status row. */
export function parseSystemctlShow(daemon: string, text: string): DaemonStatus {
  const kv = new Map(
    text
      .split('\n')
      .filter((l) => l.includes('='))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  const pid = Number(kv.get('MainPID') ?? 0);
  return {
    daemon,
    state: `${kv.get('ActiveState') ?? 'unknown'}/${kv.get('SubState') ?? '?'}`,
    pid: pid > 0 ? pid : null,
    detail: kv.get('StatusText') ?? '',
  };
}

/** `pm2 jlist` → status rows of our daemons. */
export function parsePm2List(text: string, daemons: readonly string[]): DaemonStatus[] {
  const list = JSON.parse(text.slice(text.indexOf('['))) as Array<{
    name: string;
    pid?: number;
    pm2_env?: { status?: string; restart_time?: number };
  }>;
  return daemons.map((d) => {
    const p = list.find((x) => x.name === pm2Name(d));
    return p
      ? { daemon: d, state: p.pm2_env?.status ?? 'unknown', pid: p.pid || null, detail: `restarts ${p.pm2_env?.restart_time ?? 0}` }
      : { daemon: d, state: 'not started', pid: null, detail: '' };
  });
}

/** Runs one planned command; inherit for start/stop/logs, capture for status. */
export function run(inv: Invocation, capture: boolean): { status: number; stdout: string; stderr: string } {
  const r = spawnSync(inv.cmd, inv.args, { stdio: capture ? ['ignore', 'pipe', 'pipe'] : 'inherit', encoding: 'utf8' });
  if (r.error) return { status: 127, stdout: '', stderr: r.error.message };
  return { status: r.status ?? 1, stdout: r.stdout ?? '', stderr: r.stderr ?? '' };
}
