import type { Command, CommanderError } from 'commander';
import { deliverToService, socketmapServer, type DeliverOutcome, type MtaTarget } from '../../lib/mta-client/index.js';
import { listen } from '../../daemons/shared/listen.js';
import type { Server } from 'node:http';
import { configFrom, EXIT, type GlobalOptions } from '../output.js';

function targetOf(g: GlobalOptions, url?: string): MtaTarget {
  const config = configFrom(g);
  const api = config.get('listen:api');
  return {
    url: url ?? (api.startsWith('/') ? api : `http://${api}`),
    secret: process.env.SVCMAIL_INGEST_SECRET ?? config.get('mail:transport:ingest:secret'),
  };
}

/** What `svcmail deliver --json` prints: one object, on success and on failure alike. */
export interface DeliverReport {
  /** delivered (exit 0), deferred (exit 75: the MTA tries again) or bounced (any other exit code). */
  outcome: 'delivered' | 'deferred' | 'bounced';
  exitCode: number;
  /** The enhanced status code (RFC 3463) and its text, as the MTA writes them into a bounce or its log. */
  status: string;
  text: string;
  /** The MTA's queue id as given with -q, and the id the service filed the hand-off under. */
  queueId: string | null;
  transactionId: string | null;
  /** How many mailbox entries the hand-off queued (duplicates of an earlier hand-off count none). */
  queued: number | null;
  /** One result per envelope recipient: queued, duplicate, relayed, unknown or rejected (with a reason). */
  recipients: Array<{ recipient: string; status: string; mailboxes?: number; reason?: string }>;
  /** The HTTP status of the service's answer; null when it could not be reached. */
  httpStatus: number | null;
  /** The service's error body (code, message) when it refused the hand-off. */
  error: { code?: string; message?: string } | null;
}

/** The outcome the exit code stands for: delivered (0), deferred (75) or bounced (any other). */
const outcomeOf = (exitCode: number): DeliverReport['outcome'] =>
  exitCode === EXIT.ok ? 'delivered' : exitCode === EXIT.tempfail ? 'deferred' : 'bounced';

/** What the service answered: the transaction, queued count and per-recipient results when it accepted (202), else its error body. */
function answerOf(out: DeliverOutcome): Pick<DeliverReport, 'transactionId' | 'queued' | 'recipients' | 'httpStatus' | 'error'> {
  const body = out.answer?.body ?? null;
  const accepted = out.answer?.status === 202;
  return {
    transactionId: typeof body?.transactionId === 'string' ? body.transactionId : null,
    queued: accepted && typeof body?.queued === 'number' ? body.queued : null,
    recipients: accepted && Array.isArray(body?.results) ? (body.results as DeliverReport['recipients']) : [],
    httpStatus: out.answer?.status ?? null,
    error: !accepted && body ? { code: body.code as string | undefined, message: body.message as string | undefined } : null,
  };
}

/** The --json report of a hand-off: its outcome, the status code and text of its message, and the service's answer. */
function reportOf(out: DeliverOutcome, queueId: string | undefined): DeliverReport {
  const sp = out.message.indexOf(' ');
  const { transactionId, queued, recipients, httpStatus, error } = answerOf(out);
  return {
    outcome: outcomeOf(out.exitCode),
    exitCode: out.exitCode,
    status: sp < 0 ? out.message : out.message.slice(0, sp),
    text: sp < 0 ? '' : out.message.slice(sp + 1),
    queueId: queueId ?? null,
    transactionId,
    queued,
    recipients,
    httpStatus,
    error,
  };
}

interface DeliverOptions {
  from: string;
  queueId?: string;
  clientAddress?: string;
  clientHelo?: string;
  clientHostname?: string;
  url?: string;
}

/**
 * svcmail deliver: the Postfix pipe(8) command. Streams stdin to /internal/mta/deliver and exits
 * with a sysexits code Postfix understands (0 delivered, 75 try again later, 67 unknown user ...).
 * Text goes to stderr, where pipe(8) takes it for the bounce or the log; --json prints the
 * outcome as one object on stdout instead and keeps the same exit code.
 * svcmail mta-lookup: a socketmap server answering Postfix's domain and recipient lookups.
 */
export function registerDeliver(program: Command): void {
  program
    .command('deliver')
    .description(
      'hand one message from stdin to the service (Postfix pipe(8): argv=svcmail deliver -f ${sender} -q ${queue_id} --client-address=${client_address} --client-helo=${client_helo} --client-hostname=${client_hostname} -- ${recipient})',
    )
    .requiredOption('-f, --from <sender>', 'envelope sender (empty for bounces)')
    .option('-q, --queue-id <id>', 'MTA queue id; a retry of the same id creates no duplicate')
    .option(
      '--client-address <ip>',
      "the SMTP client's IP address, for the spam scan's SPF, DMARC and IP-list checks ('unknown' or empty: not known)",
    )
    .option('--client-helo <name>', 'the name the SMTP client gave in HELO/EHLO')
    .option('--client-hostname <name>', "the SMTP client's verified reverse-DNS name ('unknown': none)")
    .option('--url <url>', 'api daemon address (default http://<listen:api>)')
    .argument('<recipients...>', 'envelope recipients')
    .exitOverride(function (this: Command, err: CommanderError) {
      // A usage error (a missing -f or recipient) still answers --json with one object; the
      // program's handler then exits with EX_USAGE as for any command.
      if (err.exitCode !== 0 && this.optsWithGlobals<GlobalOptions>().json) {
        process.stdout.write(
          `${JSON.stringify(reportOf({ exitCode: EXIT.usage, message: `5.3.0 ${err.message.replace(/^error: /, '')}` }, this.opts<{ queueId?: string }>().queueId), null, 2)}\n`,
        );
      }
      throw err;
    })
    .action(async (recipients: string[], opts: DeliverOptions, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      let out: DeliverOutcome;
      try {
        out = await deliverToService(targetOf(g, opts.url), {
          sender: opts.from === '<>' ? '' : opts.from,
          recipients,
          queueId: opts.queueId,
          client: { address: opts.clientAddress, helo: opts.clientHelo, hostname: opts.clientHostname },
          message: process.stdin,
        });
      } catch (e) {
        // Anything on this side (a configuration error included) defers: the MTA keeps the message.
        out = { exitCode: EXIT.tempfail, message: `4.3.0 svcmail deliver: ${(e as Error).message}` };
      }
      if (g.json) process.stdout.write(`${JSON.stringify(reportOf(out, opts.queueId), null, 2)}\n`);
      else process.stderr.write(`${out.message}\n`);
      process.exit(out.exitCode);
    });
  program
    .command('mta-lookup')
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
