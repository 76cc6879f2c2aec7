// What `svcmail setup` does in both of its faces (flags, cli/commands/setup.ts; the ink wizard,
// cli/ui/setup-wizard.tsx): the flags as a SetupInput, the run, and the text it prints.
import type { SetupInput, SetupResult } from '../lib/setup/index.js';
import { renderChecklist } from './commands/dns.js';
import { CliError, EXIT, SYSTEM_CONFIG, type GlobalOptions } from './output.js';

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
    configFile,
    domains: f.domain ?? [],
    host: f.host,
    baseUrl: f.baseUrl,
    authUrl: f.authUrl,
    authSecret: f.authSecret ?? process.env.SVCMAIL_AUTH_SECRET,
    authAudience: f.authAudience,
    authIssuer: f.authIssuer,
    dataDir: f.dataDir ?? (isRoot() && configFile === SYSTEM_CONFIG ? '/var/lib/svcmail' : undefined),
    datastoreUrl: f.datastoreUrl,
    redisUrl: f.redisUrl,
    rotate: f.rotate,
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
  const { runSetup, SetupError } = await import('../lib/setup/index.js');
  try {
    return await runSetup(input, progress);
  } catch (e) {
    if (e instanceof SetupError) throw new CliError(e.message, EXIT.usage);
    throw e;
  }
}
