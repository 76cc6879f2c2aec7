import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { flatten, parseText } from '../../lib/config/load.js';
import { loadConfig, schema, ConfigError, type SettingName } from '../../lib/config/index.js';
import { CliError, configFrom, emit, EXIT, type GlobalOptions } from '../output.js';

function fileOf(g: GlobalOptions): string {
  const file = g.config ?? process.env.SVCMAIL_CONFIG;
  if (!file) throw new CliError('name the configuration file with --config FILE (or SVCMAIL_CONFIG)', EXIT.usage);
  return file;
}

export function registerConfig(program: Command): void {
  const config = program.command('config').description('read, change and check the configuration');

  config.command('get [name]')
    .description('print one setting or all of them (secrets masked)')
    .action((name: string | undefined, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = configFrom(g).redacted();
      if (name && !(name in schema)) throw new CliError(`unknown setting ${name} (svcmail config get lists them all)`, EXIT.usage);
      const data = name ? { [name]: all[name] } : all;
      emit(g, data, (d: Record<string, unknown>) => Object.entries(d).map(([k, v]) => (name ? JSON.stringify(v ?? null) : `${k} = ${JSON.stringify(v ?? null)}`)).join('\n'));
    });

  config.command('set <name> <value>')
    .description('change one setting in the configuration file (validated before it is written)')
    .action((name: string, value: string, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const file = fileOf(g);
      if (!(name in schema)) throw new CliError(`unknown setting ${name} (svcmail config get lists them all)`, EXIT.usage);
      const current = existsSync(file) ? flatten(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>, file) : new Map<SettingName, unknown>();
      current.set(name as SettingName, parseText(name as SettingName, value));
      const next = Object.fromEntries([...current].sort(([a], [b]) => a.localeCompare(b)));
      try {
        loadConfig({ values: next as never, env: { NODE_ENV: process.env.NODE_ENV } });
      } catch (e) {
        if (e instanceof ConfigError) throw new CliError(`not written: ${e.message}`, EXIT.config);
        throw e;
      }
      const tmp = `${file}.tmp-${process.pid}`;
      writeFileSync(tmp, `${JSON.stringify(next, null, 2)}\n`, { mode: 0o640 });
      chmodSync(tmp, 0o640);
      renameSync(tmp, file);
      emit(g, { file, name, written: true }, () => `${name} written to ${file}; restart the daemons to apply it (svcmail restart)`);
    });

  config.command('check')
    .description('validate the configuration as the daemons will load it; exit 78 when it is wrong')
    .action((_o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const c = configFrom(g);
      if (!c.isDevelopment && !c.has('auth:secret')) throw new CliError('configuration error: auth:secret: required', EXIT.config);
      emit(g, { ok: true, file: c.file ?? null, nodeEnv: c.nodeEnv }, () => `configuration OK${c.file ? ` (${c.file})` : ''}`);
    });
}
