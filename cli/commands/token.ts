import type { Command } from 'commander';
import { CliError, configFrom, emit, EXIT, type GlobalOptions } from '../output.js';

/** 1h, 30m, 900s, 2d or plain seconds. */
export function parseTtl(text: string): number {
  const m = /^(\d+)\s*([smhd]?)$/.exec(text.trim());
  if (!m) throw new CliError(`--ttl ${text}: use a number with s, m, h or d (for example 1h)`, EXIT.usage);
  const n = Number(m[1]) * ({ '': 1, s: 1, m: 60, h: 3600, d: 86400 } as const)[m[2] as '' | 's' | 'm' | 'h' | 'd'];
  if (n < 1 || n > 14 * 86400) throw new CliError('--ttl must be between 1s and 14d', EXIT.usage);
  return n;
}

export function registerToken(program: Command): void {
  program
    .command('token')
    .description('print a session token signed with the configured auth:secret (scripting on the appliance)')
    .requiredOption('--user <uid>', 'user uid (profile.uid)')
    .option('--roles <r1,r2>', 'roles (profile.roles), comma-separated', '')
    .option('--elevated', 'mark the token elevated now (trusted roles count only then)')
    .option(
      '--ttl <duration>',
      'lifetime: 1h, 30m, 900s …; at most auth:options:max_token_age_seconds (1h by default), which the server enforces',
      '1h',
    )
    .action(async (opts: { user: string; roles: string; elevated?: boolean; ttl: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const config = configFrom(g);
      if (!config.has('auth:secret'))
        throw new CliError(
          'auth:secret is not set: run svcmail setup (or, in development, start the appliance once with NODE_ENV=development npm start: it keeps a secret in data_dir)',
          EXIT.config,
        );
      const roles = opts.roles
        .split(',')
        .map((r) => r.trim())
        .filter(Boolean);
      const ttlSeconds = parseTtl(opts.ttl);
      const max = config.get('auth:options:max_token_age_seconds');
      if (ttlSeconds > max)
        throw new CliError(
          `--ttl ${opts.ttl} is longer than auth:options:max_token_age_seconds (${max} s): the server would refuse the token. Use --ttl ${max}s or less`,
          EXIT.usage,
        );
      // Loaded on use: lib/auth (jose) only when a token is signed, not by every command.
      const { signToken } = await import('../../lib/auth/index.js');
      const token = await signToken(config, { uid: opts.user, roles, elevated: opts.elevated, ttlSeconds });
      emit(g, { token, uid: opts.user, roles, elevated: Boolean(opts.elevated), expiresIn: ttlSeconds }, (d: { token: string }) => d.token);
    });
}
