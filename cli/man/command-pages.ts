import type { Command, Option } from 'commander';
import { EXIT, EXIT_MEANINGS } from '../output.js';
import { esc, para, pre, sentence, tp, type Page, type Section } from './roff.js';

// The synopsis, options and subcommands come from the commander declarations (npm/cli style: one
// declaration drives --help and the man page); this file adds only what --help cannot say.
const EXTRA: Record<string, Section[]> = {
  setup: [
    {
      title: 'Files',
      body: [
        ...tp('/etc/svcmail/svcmail.conf', 'the configuration (0640, owned by svcmail when run as root); ./svcmail.conf for other users'),
        ...tp('<data_dir>/pki/ca', 'ca.crt and ca.key (0600) of the local P-256 CA (mail:pki:local_ca:dir)'),
        ...tp('<data_dir>/dkim', '<domain>.mail.key (0600) and .pub: the DKIM key per domain (mail:dkim:dir)'),
      ],
    },
    {
      title: 'Examples',
      body: pre([
        'svcmail setup --non-interactive --domain example.org --host mail.example.org \\',
        '  --auth-url https://auth.example.org --auth-secret "$SECRET"',
      ]),
    },
    {
      title: 'Notes',
      body: para(
        'Running setup again keeps every generated key and secret; --rotate replaces them (old key files are renamed *.rotated-<ms>). In a terminal without --non-interactive, setup asks for what the flags did not give.',
      ),
    },
  ],
  dns: [
    {
      title: 'Exit status',
      body: para(
        '0 when every record is present (with --check) or the checklist was printed; 1 when a record is missing, wrong or could not be looked up.',
      ),
    },
  ],
  doctor: [
    {
      title: 'Exit status',
      body: para(
        "0 when no check failed (warnings and skipped checks do not count), 1 otherwise. Each failure prints a fix line. rspamd, clamd and the push and protocols daemons are checked at their configured addresses, or the defaults when none is set: one that cannot be connected to fails (a warning under NODE_ENV development, where lib/scan counts mail as clean without scanners, and for a daemon only while its address is the default); the push daemon is asked for its /push/status, whose event transport is compared with redis:url (a mismatch is a warning), the protocols daemon for its /protocols/status. The api row reads GET /api/status and names any daemon it waits for. When the sign-in service does not answer, the clock row says it was not checked and why. DNS records are worded as svcmail dns --check words them: present, missing, wrong, not checked. The datastore check compares the columns of every model's table with the database and names the missing ones. With mail:autodiscover:public_url set, a synthetic client asks Autodiscover on that URL what a phone and Outlook would (the mobile-sync and Outlook XML schemas and JSON v2) and checks that every advertised URL lies on it; an ErrorCode 601 for a protocol no plugin of the build serves is expected. Mobile sync is asked OPTIONS at /Microsoft-Server-ActiveSync on the same URL and, given --signin-user and --signin-password, a synthetic device (DeviceId svcmaildoctor, one record reused by every run) provisions and lists the folders with that app password.",
      ),
    },
  ],
  admin: [
    {
      title: 'Authentication',
      body: para(
        'Each call carries a token minted here with auth:secret: uid svcmail-cli, the first trusted role, elevated now, five minutes. The API audits every change as svcmail-cli. Mailbox reads use ?scope=admin and return administrative details only.',
      ),
    },
    {
      title: 'Exit status',
      body: [
        ...tp('0', 'done'),
        ...tp('65', 'the API refused the input (400)'),
        ...tp('66', 'no such record (404)'),
        ...tp('69', 'the API cannot be reached or failed (5xx)'),
        ...tp('73', 'already exists, or a stale version (409)'),
        ...tp('77', 'not allowed (401, 403)'),
        ...tp('78', 'configuration error'),
      ],
    },
  ],
  deliver: [
    {
      title: 'The SMTP session',
      body: [
        ...para(
          "--client-address, --client-helo and --client-hostname carry what Postfix knew of the SMTP client (pipe(8) macros ${client_address}, ${client_helo}, ${client_hostname}; see /usr/share/doc/svcmail/postfix/master.cf.snippet). The worker gives them to rspamd with the message, so SPF, DKIM, DMARC and the IP blocklists judge the real sender; without them rspamd sees a local client and skips those checks. 'unknown', Postfix's word for a value it does not have, counts as absent.",
        ),
      ],
    },
    {
      title: 'Output',
      body: [
        ...para(
          'Without --json the enhanced status code (RFC 3463) and its text go to standard error, where pipe(8) takes them for the bounce or the log, and standard output stays empty.',
        ),
        ...para(
          "With --json standard output is one JSON object, on success and on failure alike (a usage error included), in place of the status line: outcome (delivered, deferred or bounced), exitCode, status (the enhanced status code), text, queueId (as given with -q), transactionId (the id the service filed the hand-off under), queued (mailbox entries queued), recipients (one result per envelope recipient: queued, duplicate, relayed, unknown or rejected, with a reason), httpStatus (the service's answer; null when it could not be reached) and error (the service's code and message when it refused the hand-off).",
        ),
      ],
    },
    {
      title: 'Exit status',
      body: [
        ...para(
          'sysexits(3) codes, as Postfix pipe(8) reads them: 75 defers (the message stays queued and is tried again), the other non-zero codes bounce.',
        ),
        ...tp(
          String(EXIT.ok),
          'delivered (2.0.0): the service took the message for at least one recipient: queued, relayed, already queued by an earlier hand-off with the same queue id, or refused by a transport rule or a members-only list',
        ),
        ...tp(String(EXIT.usage), 'usage error (5.3.0): -f or a recipient is missing'),
        ...tp(
          String(EXIT.dataerr),
          'the service found the hand-off malformed (400, 5.6.0): an empty message, a malformed envelope address, or a --client-address or --client-hostname that is not an address or host name',
        ),
        ...tp(String(EXIT.nouser), 'no recipient was accepted: unknown users (5.1.1) or a domain not served here (5.1.2)'),
        ...tp(String(EXIT.unavailable), 'the message is larger than mail:ingest:max_message_bytes (413, 5.3.4)'),
        ...tp(
          String(EXIT.tempfail),
          'try again later (4.3.0): the service cannot be reached, is busy (429, 5xx) or refused the ingest secret, or the configuration cannot be read',
        ),
      ],
    },
  ],
  start: [
    {
      title: 'Supervision',
      body: para(
        "Under systemd (when it is the system manager) start, stop, restart, status and logs drive svcmail.target and the svcmail-<daemon>.service units through systemctl and journalctl. Elsewhere they run pm2 with packaging/pm2/ecosystem.config.cjs when pm2 is installed (pm2 is run as a separate program, never bundled). SVCMAIL_SUPERVISOR=systemd|pm2|none forces one. Under a pm2 run by root the daemons run as the svcmail user and group (SVCMAIL_USER names another account), in its home directory, as the systemd units do; a pm2 run by another user runs them as that user. --foreground runs every daemon in this terminal with prefixed logs (readable on a terminal, JSON otherwise: --log-format), prints where each listens and one ready line; Ctrl-C stops them cleanly, and the daemons stop when the terminal goes away. A daemon that dies unasked is started again after 1 s, then 2, 4 … up to 30 s while it keeps dying within a minute of starting (the log says so; the other daemons keep serving, as under systemd's Restart=); after five such deaths in a row, or when it cannot start with the configuration (exit 78), every daemon is stopped and start exits non-zero. start and restart through systemd or pm2 then wait until the daemons answer: GET /api/status?require=<the daemons started> when the api daemon is among them, else the started daemon's own status; a progress line goes to standard error, then one line says ready. SVCMAIL_READY_TIMEOUT (seconds, default 120; 0 does not wait) bounds the wait; a daemon that never answers ends it with exit 69, naming it.",
      ),
    },
  ],
};

function optionLines(opts: readonly Option[]): string[] {
  return opts
    .filter((o) => !o.hidden)
    .flatMap((o) =>
      tp(
        o.flags,
        `${o.description}${o.defaultValue !== undefined && o.defaultValue !== false ? ` (default ${JSON.stringify(o.defaultValue)})` : ''}`,
      ),
    );
}

function usageOf(cmd: Command): string {
  const names: string[] = [];
  for (let c: Command | null = cmd; c; c = c.parent) names.unshift(c.name());
  return `${names.join(' ')} ${cmd.usage()}`.trim();
}

function subcommandLines(cmd: Command, depth = 0): string[] {
  return cmd.commands
    .filter((c) => c.name() !== 'help')
    .flatMap((c) => [
      ...tp(usageOf(c), c.description()),
      ...(c.options.length ? ['.RS', ...optionLines(c.options), '.RE'] : []),
      ...(depth < 3 ? subcommandLines(c, depth + 1) : []),
    ]);
}

export function commandPage(cmd: Command): Page {
  const name = `svcmail-${cmd.name()}`;
  const sections: Section[] = [
    { title: 'Synopsis', body: [`.B ${esc(usageOf(cmd))}`] },
    { title: 'Description', body: para(cmd.description()) },
  ];
  if (cmd.options.length) sections.push({ title: 'Options', body: optionLines(cmd.options) });
  if (cmd.commands.length) sections.push({ title: 'Commands', body: subcommandLines(cmd) });
  sections.push(...(EXTRA[cmd.name()] ?? []));
  sections.push({ title: 'See also', body: ['.BR svcmail (1),', '.BR svcmail.conf (5)'] });
  return { name, section: 1, summary: cmd.description().split(/[;.]/)[0], sections };
}

export function mainPage(program: Command): Page {
  const cmds = program.commands.filter((c) => c.name() !== 'help');
  return {
    name: 'svcmail',
    section: 1,
    summary: 'set up, check, script and supervise the svcmail mail-server appliance',
    sections: [
      { title: 'Synopsis', body: ['.B svcmail', '[\\fIglobal options\\fR] \\fIcommand\\fR [\\fIargs\\fR]'] },
      {
        title: 'Description',
        body: [
          ...para(program.description()),
          ...para(
            'svcmail runs four daemons sharing one library: api (HTTP API, MTA hand-off, pages), worker (ingest scan and delivery, jobs), push (WebSocket /push) and protocols (mobile sync, MAPI over HTTP, Autodiscover). Every command prints JSON with --json, text otherwise, and ends with a summary line.',
          ),
          ...para(
            'Mobile sync (Exchange ActiveSync 14.0, 14.1, 16.0, 16.1) is served at /Microsoft-Server-ActiveSync, the path every real client hard-codes and the one Autodiscover advertises, and at /Vendor-Server-ActiveSync, the spelling of the service specification, in any letter case; the version header is read as MS-ASProtocolVersion or Vendor-ASProtocolVersion, and OPTIONS answers both spellings. App passwords over HTTP Basic are accepted on both paths (mail:basic_auth:paths). svcmail admin devices lists the devices and wipes, unblocks and inspects them. Devices get mail, contacts (three addresses, the phone and address slots ActiveSync has), calendar events in the zone they were planned in (recurrences keep their local time across daylight-saving changes) and tasks; a recurrence ActiveSync cannot express (hourly, several months or days of the month, a position with several weekdays) reaches a device as its first occurrence, and a change from the device keeps the rule.',
          ),
        ],
      },
      { title: 'Global options', body: optionLines(program.options) },
      { title: 'Commands', body: cmds.flatMap((c) => tp(c.name(), sentence(c.description()), `See svcmail-${c.name()}(1).`)) },
      {
        title: 'Environment',
        body: [
          ...tp('SVCMAIL_CONFIG', 'configuration file when --config is not given (else /etc/svcmail/svcmail.conf when it exists)'),
          ...tp('SVCMAIL__a__b__c', 'overrides setting a:b:c'),
          ...tp('NODE_ENV', 'production unless dev, development or test'),
          ...tp('SVCMAIL_SUPERVISOR', 'systemd, pm2 or none: force the service manager'),
          ...tp('SVCMAIL_USER', 'under a pm2 run by root: the account the daemons run as (default svcmail, when it exists)'),
          ...tp('SVCMAIL_READY_TIMEOUT', 'seconds start and restart wait for the daemons to answer (default 120; 0: do not wait)'),
        ],
      },
      {
        title: 'Files',
        body: [
          ...tp('/etc/svcmail/svcmail.conf', 'configuration, see svcmail.conf(5)'),
          ...tp('/var/lib/svcmail', 'data: embedded database, blobs, CA, DKIM keys'),
          ...tp('/lib/systemd/system/svcmail.target', 'the units: svcmail-api, -worker, -push, -protocols'),
        ],
      },
      {
        title: 'Exit status',
        body: Object.entries(EXIT_MEANINGS)
          .sort(([a], [b]) => Number(a) - Number(b))
          .flatMap(([code, meaning]) => tp(code, meaning)),
      },
      { title: 'See also', body: [cmds.map((c) => `.BR svcmail\\-${esc(c.name())} (1),`).join('\n'), '.BR svcmail.conf (5)'] },
    ],
  };
}
