import type { Command } from 'commander';
import { ALL_DAEMONS, detectManager, parsePm2List, parseSystemctlShow, plan, run, type Action, type DaemonStatus } from '../supervisor.js';
import { CliError, emit, EXIT, table, type GlobalOptions } from '../output.js';

function checkDaemon(daemon?: string): void {
  if (daemon && !(ALL_DAEMONS as readonly string[]).includes(daemon)) throw new CliError(`unknown daemon ${daemon}; one of ${ALL_DAEMONS.join(', ')}`, EXIT.usage);
}

/** start, stop, restart and logs: hand over to the service manager and pass its exit status on. */
export function supervise(action: Exclude<Action, 'status'>, daemon: string | undefined, g: GlobalOptions, opts: { follow?: boolean; lines?: number } = {}): void {
  checkDaemon(daemon);
  const manager = detectManager();
  if (manager === 'none') {
    throw new CliError(action === 'start'
      ? 'neither systemd nor pm2 runs here: svcmail start --foreground runs the daemons in this terminal (or install pm2: npm install -g pm2)'
      : `neither systemd nor pm2 runs here, so there is nothing to ${action}`, EXIT.unavailable);
  }
  for (const inv of plan(manager, action, daemon, opts)) {
    const r = run(inv, false);
    if (r.status !== 0) throw new CliError(`${inv.cmd} ${inv.args.join(' ')} failed (exit ${r.status})${r.stderr ? `: ${r.stderr.trim()}` : ''}`, EXIT.failure);
  }
  if (action !== 'logs' && !g.json) process.stdout.write(`${action}: ${daemon ?? 'all daemons'} (via ${manager})\n`);
}

export function status(daemon: string | undefined): { manager: string; daemons: DaemonStatus[] } {
  checkDaemon(daemon);
  const manager = detectManager();
  const daemons = daemon ? [daemon] : [...ALL_DAEMONS];
  if (manager === 'none') return { manager, daemons: daemons.map((d) => ({ daemon: d, state: 'unmanaged', pid: null, detail: 'no systemd or pm2 here' })) };
  const invs = plan(manager, 'status', daemon);
  if (manager === 'pm2') {
    const r = run(invs[0], true);
    if (r.status !== 0) throw new CliError(`pm2 jlist failed: ${r.stderr.trim()}`, EXIT.unavailable);
    return { manager, daemons: parsePm2List(r.stdout, daemons) };
  }
  return { manager, daemons: invs.map((inv, i) => parseSystemctlShow(daemons[i], run(inv, true).stdout)) };
}

export function registerSupervise(program: Command): void {
  for (const action of ['stop', 'restart'] as const) {
    program.command(`${action} [daemon]`)
      .description(`${action} the daemons (all, or one of ${ALL_DAEMONS.join(', ')}) through systemd or pm2`)
      .action((daemon: string | undefined, _o: unknown, cmd: Command) => supervise(action, daemon, cmd.optsWithGlobals<GlobalOptions>()));
  }
  program.command('status [daemon]')
    .description('state of each daemon under systemd or pm2; exit 3 when one is not running')
    .action((daemon: string | undefined, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const s = status(daemon);
      emit(g, s, (d: typeof s) => `${table(d.daemons as never, ['daemon', 'state', 'pid', 'detail'])}\n\nstatus: ${d.daemons.filter((x) => /^(active|online)/.test(x.state)).length} of ${d.daemons.length} running (${d.manager})`);
      if (!s.daemons.every((x) => /^(active|online)/.test(x.state))) process.exitCode = 3; // LSB: program is not running
    });
  program.command('logs [daemon]')
    .description('recent log lines of the daemons (journalctl under systemd, pm2 logs otherwise)')
    .option('-f, --follow', 'keep printing new lines')
    .option('-n, --lines <n>', 'how many lines', (v) => Number(v), 100)
    .action((daemon: string | undefined, opts: { follow?: boolean; lines: number }, cmd: Command) => supervise('logs', daemon, cmd.optsWithGlobals<GlobalOptions>(), opts));
}
