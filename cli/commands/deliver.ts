import type { Command } from 'commander';
import { deliverToService, socketmapServer, type MtaTarget } from '../../lib/ingest/mta-client.js';
import { listen } from '../../daemons/shared/listen.js';
import type { Server } from 'node:http';
import { configFrom, type GlobalOptions } from '../output.js';

function targetOf(g: GlobalOptions, url?: string): MtaTarget {
  const config = configFrom(g);
  const api = config.get('listen:api');
  return {
    url: url ?? (api.startsWith('/') ? api : `http://${api}`),
    secret: process.env.SVCMAIL_INGEST_SECRET ?? config.get('mail:transport:ingest:secret'),
  };
}

/**
 * svcmail deliver: the Postfix pipe(8) command. Streams stdin to /internal/mta/deliver and exits
 * with a sysexits code Postfix understands (0 delivered, 75 try again later, 67 unknown user ...).
 * svcmail mta-lookup: a socketmap server answering Postfix's domain and recipient lookups.
 */
export function registerDeliver(program: Command): void {
  program.command('deliver')
    .description('hand one message from stdin to the service (Postfix pipe(8): argv=svcmail deliver -f ${sender} -q ${queue_id} -- ${recipient})')
    .requiredOption('-f, --from <sender>', 'envelope sender (empty for bounces)')
    .option('-q, --queue-id <id>', 'MTA queue id; a retry of the same id creates no duplicate')
    .option('--url <url>', 'api daemon address (default http://<listen:api>)')
    .argument('<recipients...>', 'envelope recipients')
    .action(async (recipients: string[], opts: { from: string; queueId?: string; url?: string }, cmd: Command) => {
      let code: number;
      try {
        const out = await deliverToService(targetOf(cmd.optsWithGlobals<GlobalOptions>(), opts.url), { sender: opts.from === '<>' ? '' : opts.from, recipients, queueId: opts.queueId, message: process.stdin });
        process.stderr.write(`${out.message}\n`);
        code = out.exitCode;
      } catch (e) {
        process.stderr.write(`4.3.0 svcmail deliver: ${(e as Error).message}\n`);
        code = 75;
      }
      process.exit(code);
    });
  program.command('mta-lookup')
    .description('serve Postfix socketmap lookups (maps "domain" and "resolve") against /internal/mta')
    .option('--listen <address>', 'host:port or unix socket path', '127.0.0.1:10027')
    .option('--url <url>', 'api daemon address (default http://<listen:api>)')
    .action(async (opts: { listen: string; url?: string }, cmd: Command) => {
      const server = socketmapServer(targetOf(cmd.optsWithGlobals<GlobalOptions>(), opts.url));
      const bound = await listen(server as unknown as Server, opts.listen, '--listen');
      process.stderr.write(`svcmail mta-lookup: listening on ${bound}\n`);
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      server.close();
    });
}
