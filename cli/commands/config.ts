import { chmodSync, chownSync, existsSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { Command } from 'commander';
import { flatten, parseText } from '../../lib/config/index.js';
import { loadConfig, schema, ConfigError, type SettingName } from '../../lib/config/index.js';
import { CliError, configFileOf, configFrom, emit, EXIT, SYSTEM_CONFIG, type GlobalOptions } from '../output.js';

/** The file to edit: found as every other command finds it (--config, SVCMAIL_CONFIG, /etc/svcmail/svcmail.conf). */
function fileOf(g: GlobalOptions): string {
  const file = configFileOf(g);
  if (!file)
    throw new CliError(
      `no configuration file: name one with --config FILE (or SVCMAIL_CONFIG), or run svcmail setup to create ${SYSTEM_CONFIG}`,
      EXIT.usage,
    );
  return file;
}

/**
 * Writes the file through a temporary one and a rename, keeping the owner, group and mode of the
 * file it replaces (the daemons, User=svcmail, must still read it after root edits it), except that
 * it never stays readable by others or writable by the group: it holds secrets.
 */
function replaceKeepingOwner(file: string, text: string): void {
  const before = existsSync(file) ? statSync(file) : null;
  const tmp = `${file}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o640 });
  try {
    chmodSync(tmp, before ? before.mode & 0o640 : 0o640);
    if (before && (before.uid !== process.getuid?.() || before.gid !== process.getgid?.())) chownSync(tmp, before.uid, before.gid);
    renameSync(tmp, file);
  } catch (e) {
    rmSync(tmp, { force: true });
    throw e;
  }
}

export function registerConfig(program: Command): void {
  const config = program.command('config').description('read, change and check the configuration');

  config
    .command('get [name]')
    .description('print one setting or all of them (secrets masked)')
    .action((name: string | undefined, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const all = configFrom(g).redacted();
      if (name && !(name in schema)) throw new CliError(`unknown setting ${name} (svcmail config get lists them all)`, EXIT.usage);
      const data = name ? { [name]: all[name] } : all;
      emit(g, data, (d: Record<string, unknown>) =>
        Object.entries(d)
          .map(([k, v]) => (name ? JSON.stringify(v ?? null) : `${k} = ${JSON.stringify(v ?? null)}`))
          .join('\n'),
      );
    });

  config
    .command('set <name> <value>')
    .description('change one setting in the configuration file (validated before it is written)')
    .action((name: string, value: string, _o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const file = fileOf(g);
      if (!(name in schema)) throw new CliError(`unknown setting ${name} (svcmail config get lists them all)`, EXIT.usage);
      const current = existsSync(file)
        ? flatten(JSON.parse(readFileSync(file, 'utf8')) as Record<string, unknown>, file)
        : new Map<SettingName, unknown>();
      current.set(name as SettingName, parseText(name as SettingName, value));
      const next = Object.fromEntries([...current].sort(([a], [b]) => a.localeCompare(b)));
      try {
        loadConfig({ values: next as never, env: { NODE_ENV: process.env.NODE_ENV } });
      } catch (e) {
        if (e instanceof ConfigError) throw new CliError(`not written: ${e.message}`, EXIT.config);
        throw e;
      }
      try {
        replaceKeepingOwner(file, `${JSON.stringify(next, null, 2)}\n`);
      } catch (e) {
        throw new CliError(
          `not written: ${file}: ${(e as NodeJS.ErrnoException).code === 'EACCES' || (e as NodeJS.ErrnoException).code === 'EPERM' ? "permission denied (run it as root or as the file's owner)" : (e as Error).message}`,
          EXIT.failure,
        );
      }
      emit(g, { file, name, written: true }, () => `${name} written to ${file}; restart the daemons to apply it (svcmail restart)`);
    });

  config
    .command('check')
    .description('validate the configuration as the daemons will load it; exit 78 when it is wrong')
    .action(async (_o: unknown, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const c = configFrom(g);
      // Loaded on use: lib/setup pulls in the datastore and the PKI, which the other commands can do without.
      const { checkStartupConfig } = await import('../../lib/setup/index.js');
      try {
        checkStartupConfig(c);
      } catch (e) {
        if (e instanceof ConfigError) throw new CliError(`configuration error: ${e.message}`, EXIT.config);
        throw e;
      }
      emit(g, { ok: true, file: c.file ?? null, nodeEnv: c.nodeEnv }, () => `configuration OK${c.file ? ` (${c.file})` : ''}`);
    });
}
