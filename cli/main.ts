import { Command, CommanderError } from 'commander';
import { PRODUCT } from '../lib/version.js';
import { registerConfig } from './commands/config.js';
import { registerStart } from './commands/start.js';
import { registerToken } from './commands/token.js';
import { registerSetup } from './commands/setup.js';
import { registerDns } from './commands/dns.js';
import { registerDoctor } from './commands/doctor.js';
import { registerSupervise } from './commands/supervise.js';
import { registerAdmin } from './commands/admin.js';
import { registerDeliver } from './commands/deliver.js';
import { CliError, collect, EXIT } from './output.js';

export function buildProgram(): Command {
  const program = new Command('svcmail')
    .description('svcmail — set up, check, script and supervise the svcmail mail-server appliance')
    .version(PRODUCT.version)
    .option('--config <file>', 'configuration file (JSON); default $SVCMAIL_CONFIG, else /etc/svcmail/svcmail.conf when it exists')
    .option('--set <a:b:c=value>', 'override one setting (repeatable)', collect)
    .option('--json', 'print machine-readable JSON')
    .showHelpAfterError('(run svcmail --help for the commands)')
    .exitOverride();
  registerStart(program);
  registerConfig(program);
  registerToken(program);
  registerSetup(program);
  registerDns(program);
  registerDoctor(program);
  registerSupervise(program);
  registerAdmin(program);
  registerDeliver(program);
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv);
  } catch (e) {
    if (e instanceof CommanderError) process.exit(e.exitCode === 0 ? 0 : EXIT.usage);
    if (e instanceof CliError) {
      process.stderr.write(`svcmail: ${e.message}\n`);
      process.exit(e.exitCode);
    }
    process.stderr.write(`svcmail: unexpected error: ${(e as Error).message}\n`);
    process.exit(EXIT.software);
  }
}
