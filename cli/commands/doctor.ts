import type { Command } from 'commander';
import { ConfigError, loadConfig, schema, type Config, type SettingName } from '../../lib/config/index.js';
import type { CheckResult } from '../../lib/setup/doctor/index.js';
import { CHECK_IDS } from '../../lib/setup/doctor-ids/index.js';
import { CliError, collect, configFileOf, emit, EXIT, type GlobalOptions } from '../output.js';

const MARK = { ok: 'ok  ', warn: 'WARN', fail: 'FAIL', skip: 'skip' } as const;

export function renderDoctor(d: { ok: boolean; results: CheckResult[] }): string {
  const lines = d.results.map((r) => `${MARK[r.status]}  ${r.title}: ${r.detail}${r.fix ? `\n      fix: ${r.fix}` : ''}`);
  const n = (s: string) => d.results.filter((r) => r.status === s).length;
  return `${lines.join('\n')}\n\ndoctor: ${n('ok')} ok, ${n('warn')} warnings, ${n('fail')} failed, ${n('skip')} skipped`;
}

/** Settings given explicitly (file, SVCMAIL__ environment, --set), so optional peers are checked only when configured. */
async function explicitSettings(file: string | undefined, set: string[] = []): Promise<Set<SettingName>> {
  const { readConfigFile } = await import('../../lib/setup/index.js');
  const out = new Set<SettingName>(file ? [...readConfigFile(file).keys()] : []);
  for (const k of Object.keys(process.env)) if (k.startsWith('SVCMAIL__')) out.add(k.slice(9).split('__').join(':') as SettingName);
  for (const s of set) out.add(s.slice(0, s.indexOf('=')) as SettingName);
  return new Set([...out].filter((n) => n in schema));
}

export function registerDoctor(program: Command): void {
  program
    .command('doctor')
    .description('check everything this server needs, each failure with a fix; exit 1 when anything fails')
    .option('--signin-user <user>', "user for a test sign-in (checks that the sign-in service's tokens verify here)")
    .option('--signin-password <password>', 'app password of that user (or SVCMAIL_DOCTOR_PASSWORD)')
    .option('--resolver <ip[:port]>', 'name server for the DNS checklist (repeatable)', collect)
    .option('--skip <check>', `leave a check out (repeatable): ${CHECK_IDS.join(', ')}`, collect)
    .action(async (opts: { signinUser?: string; signinPassword?: string; resolver?: string[]; skip?: string[] }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const skip = new Set(opts.skip ?? []);
      const unknown = [...skip].filter((s) => !(CHECK_IDS as readonly string[]).includes(s));
      if (unknown.length) throw new CliError(`--skip ${unknown.join(', ')}: one of ${CHECK_IDS.join(', ')}`, EXIT.usage);
      const file = configFileOf(g);
      let config: Config;
      const results: CheckResult[] = [];
      const live = (r: CheckResult) => {
        if (!g.json && process.stderr.isTTY) process.stderr.write(`… ${r.title}\n`);
      };
      try {
        config = loadConfig({ file, set: g.set });
        if (!config.isDevelopment && !config.has('auth:secret')) throw new ConfigError('auth:secret: required');
        results.push({
          id: 'config',
          title: 'configuration valid',
          status: 'ok',
          detail: `${file ?? '(no file: defaults and environment)'} (NODE_ENV ${config.nodeEnv})`,
        });
      } catch (e) {
        if (!(e instanceof ConfigError)) throw e;
        results.push({
          id: 'config',
          title: 'configuration valid',
          status: 'fail',
          detail: e.message,
          fix: 'svcmail config set <name> <value>, or svcmail setup',
        });
        emit(g, { ok: false, results }, renderDoctor);
        process.exitCode = EXIT.failure;
        return;
      }
      const password = opts.signinPassword ?? process.env.SVCMAIL_DOCTOR_PASSWORD;
      // Loaded on use: the checks pull in the datastore and the PKI.
      const doctor = await import('../../lib/setup/doctor/index.js');
      results.push(
        ...(await doctor.runDoctor(
          {
            config,
            explicit: await explicitSettings(file, g.set),
            nameservers: opts.resolver,
            signin: opts.signinUser && password ? { user: opts.signinUser, password } : undefined,
          },
          live,
          skip,
        )),
      );
      const okAll = !results.some((r) => r.status === 'fail');
      emit(g, { ok: okAll, results }, renderDoctor);
      process.exitCode = okAll ? EXIT.ok : EXIT.failure;
    });
}
