import type { Command } from 'commander';
import type { SetupInput, SetupResult } from '../../lib/setup/index.js';
import { CliError, collect, emit, EXIT, SYSTEM_CONFIG, type GlobalOptions } from '../output.js';
import { renderChecklist } from './dns.js';

export interface SetupFlags {
  nonInteractive?: boolean;
  domain?: string[];
  host?: string;
  baseUrl?: string;
  authUrl?: string;
  authSecret?: string;
  authAudience?: string;
  authIssuer?: string;
  dataDir?: string;
  datastoreUrl?: string;
  redisUrl?: string;
  rotate?: boolean;
}

const isRoot = () => process.getuid?.() === 0;

export function setupInput(g: GlobalOptions, f: SetupFlags): SetupInput {
  const configFile = g.config ?? process.env.SVCMAIL_CONFIG ?? (isRoot() ? SYSTEM_CONFIG : 'svcmail.conf');
  return {
    configFile, domains: f.domain ?? [], host: f.host, baseUrl: f.baseUrl, authUrl: f.authUrl,
    authSecret: f.authSecret ?? process.env.SVCMAIL_AUTH_SECRET, authAudience: f.authAudience, authIssuer: f.authIssuer,
    dataDir: f.dataDir ?? (isRoot() && configFile === SYSTEM_CONFIG ? '/var/lib/svcmail' : undefined),
    datastoreUrl: f.datastoreUrl, redisUrl: f.redisUrl, rotate: f.rotate,
  };
}

export function renderSetup(r: SetupResult): string {
  const steps = r.steps.map((s) => `  ${s.state.padEnd(8)} ${s.step}: ${s.detail}`).join('\n');
  const changed = r.steps.filter((s) => s.state !== 'kept').length;
  const waiting = r.unverified.length
    ? `\n\nStill needed for mail to flow: ${r.unverified.join(', ')} ${r.unverified.length > 1 ? 'are' : 'is'} not verified, so inbound mail is refused (5.1.2).\nPublish the MX record above, then run svcmail dns --check: it verifies each domain whose MX points here.\nOn a closed network without public DNS: svcmail admin domains verify ${r.unverified[0]} --force (with the daemons running).`
    : '';
  return `${steps}\n\nDNS records to publish:\n${renderChecklist(r.checklist)}${waiting}\n\nsetup done: ${changed} changed, ${r.steps.length - changed} kept (${r.configFile}); next: svcmail doctor`;
}

export async function setupOrFail(input: SetupInput, progress?: (step: string, detail: string) => void): Promise<SetupResult> {
  // Loaded on use: setup pulls in the datastore and the PKI, which every other command can do without.
  const { runSetup, SetupError } = await import('../../lib/setup/index.js');
  try {
    return await runSetup(input, progress);
  } catch (e) {
    if (e instanceof SetupError) throw new CliError(e.message, EXIT.usage);
    throw e;
  }
}

export function registerSetup(program: Command): void {
  program.command('setup')
    .description('configure this server: domain, host, sign-in service, datastore; generate the ingest secret, the local CA and DKIM keys; print the DNS checklist')
    .option('--non-interactive', 'never ask; take everything from the flags (scripts, CI)')
    .option('--domain <domain>', 'mail domain (repeatable)', collect)
    .option('--host <name>', 'public host name of this server, e.g. mail.example.org')
    .option('--base-url <url>', 'public base URL (default https://<host>)')
    .option('--auth-url <url>', 'URL of the sign-in service (mail:auth_server_url)')
    .option('--auth-secret <secret>', 'secret shared with the sign-in service (or SVCMAIL_AUTH_SECRET)')
    .option('--auth-audience <aud>', 'token audience (default: the first domain)')
    .option('--auth-issuer <iss>', 'token issuer (default: the sign-in service host)')
    .option('--data-dir <dir>', 'data directory (default /var/lib/svcmail as root, else beside the config file)')
    .option('--datastore-url <url>', 'postgres://… (default: embedded SQLite in the data directory)')
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
      const result = await setupOrFail(input, (step, detail) => { if (!g.json) process.stderr.write(`… ${step}: ${detail}\n`); });
      emit(g, result, renderSetup);
    });
}
