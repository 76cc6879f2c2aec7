import { Option, type Command } from 'commander';
import { DAEMONS } from '../daemons.js';
import { foreground, type LogFormat } from '../foreground.js';
import { CliError, EXIT, type GlobalOptions } from '../output.js';
import { supervise } from './supervise.js';

export function registerStart(program: Command): void {
  program
    .command('start [daemon]')
    .description(
      'start the daemons (all, or one of api, worker, push, protocols) under systemd, else pm2; --foreground runs them in this terminal',
    )
    .option('--foreground', 'run in this terminal with prefixed logs; Ctrl-C stops everything cleanly')
    .addOption(
      new Option(
        '--log-format <format>',
        'with --foreground: pretty (readable), json (one JSON object per line), or auto: pretty on a terminal, json otherwise',
      )
        .choices(['auto', 'pretty', 'json'])
        .default('auto'),
    )
    .action(async (daemon: string | undefined, opts: { foreground?: boolean; logFormat: LogFormat }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      if (opts.foreground) {
        if (daemon && !DAEMONS.some((d) => d.name === daemon))
          throw new CliError(`unknown daemon ${daemon}; one of ${DAEMONS.map((d) => d.name).join(', ')}`, EXIT.usage);
        process.exitCode = await foreground(g, daemon, opts.logFormat);
        return;
      }
      await supervise('start', daemon, g);
    });
}
