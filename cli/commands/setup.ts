import type { Command } from 'commander';
import { collect, emit, type GlobalOptions } from '../output.js';
import { renderSetup, setupInput, setupOrFail, type SetupFlags } from '../setup-flow.js';

export function registerSetup(program: Command): void {
  program
    .command('setup')
    .description(
      'configure this server: domain, host, sign-in service, datastore; generate the ingest secret, the local CA and DKIM keys; print the DNS checklist',
    )
    .option('--non-interactive', 'never ask; take everything from the flags (scripts, CI)')
    .option('--domain <domain>', 'mail domain (repeatable)', collect)
    .option('--host <name>', 'public host name of this server, e.g. mail.example.org')
    .option('--base-url <url>', 'public base URL (default https://<host>)')
    .option('--auth-url <url>', 'URL of the sign-in service (mail:auth_server_url)')
    .option('--auth-secret <secret>', 'secret shared with the sign-in service (or SVCMAIL_AUTH_SECRET)')
    .option('--auth-audience <aud>', 'token audience (default: the first domain)')
    .option('--auth-issuer <iss>', 'token issuer (default: the sign-in service host)')
    .option('--data-dir <dir>', 'data directory (default /var/lib/svcmail as root, else beside the config file)')
    .option(
      '--datastore-url <url>',
      'postgres://… or sqlite:/path/file.sqlite (SQL), or mongodb://…?replicaSet=… (MongoDB replica set; sets datastore: document); default: embedded SQLite in the data directory',
    )
    .option('--redis-url <url>', 'redis://… for events across hosts (optional)')
    .option('--rotate', 'replace the ingest secret, the CA and the DKIM keys (and accept a different --auth-secret)')
    .action(async (flags: SetupFlags, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const input = setupInput(g, flags);
      if (!flags.nonInteractive && process.stdin.isTTY && process.stdout.isTTY && !g.json) {
        const { runWizard } = await import('../ui/setup-wizard.js');
        process.exitCode = await runWizard(input);
        return;
      }
      const result = await setupOrFail(input, (step, detail) => {
        if (!g.json) process.stderr.write(`… ${step}: ${detail}\n`);
      });
      emit(g, result, renderSetup);
    });
}
