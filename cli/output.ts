import { existsSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../lib/config/index.js';

export interface GlobalOptions {
  config?: string;
  set?: string[];
  json?: boolean;
}

/** Exit codes (sysexits(3) where one fits; 3 is the LSB "not running", 130 an interrupt). */
export const EXIT = {
  ok: 0,
  failure: 1,
  notRunning: 3,
  usage: 64,
  dataerr: 65,
  noinput: 66,
  nouser: 67,
  unavailable: 69,
  software: 70,
  cantcreat: 73,
  tempfail: 75,
  noperm: 77,
  config: 78,
  cancelled: 130,
} as const;

/** What each exit code means across the commands: svcmail(1) lists them all from here. */
export const EXIT_MEANINGS: Record<(typeof EXIT)[keyof typeof EXIT], string> = {
  [EXIT.ok]: 'success',
  [EXIT.failure]: 'failure: a check failed, a DNS record is missing or wrong, a domain could not be verified',
  [EXIT.notRunning]: 'svcmail status: a daemon is not running',
  [EXIT.usage]: 'usage error: an unknown command or option, a missing argument, a value out of range',
  [EXIT.dataerr]: 'the input was refused: the API answered 400, 413 or 422 (admin), or the service found the message malformed (deliver)',
  [EXIT.noinput]: 'no such record: the API answered 404 (admin)',
  [EXIT.nouser]: 'no recipient was accepted: unknown users or a domain not served here (deliver)',
  [EXIT.unavailable]:
    'a service is unavailable: the API cannot be reached or failed (5xx), no service manager runs here, or the message is too large (deliver)',
  [EXIT.software]: 'internal error',
  [EXIT.cantcreat]: 'the record already exists, or it changed since it was read (409, admin)',
  [EXIT.tempfail]: 'temporary failure: the service is unreachable or busy; the MTA tries again later (deliver)',
  [EXIT.noperm]: 'not allowed: the API answered 401 or 403 (admin)',
  [EXIT.config]: 'configuration error',
  [EXIT.cancelled]: 'the interactive setup was cancelled (Esc or Ctrl-C); nothing was written',
};

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number = EXIT.failure,
  ) {
    super(message);
  }
}

/** Commands emit data; this renders it as JSON (--json) or as text for people. */
export function emit(opts: GlobalOptions, data: unknown, human: (d: never) => string): void {
  process.stdout.write(opts.json ? `${JSON.stringify(data, null, 2)}\n` : `${human(data as never)}\n`);
}

/** The packaged location, used when neither --config nor SVCMAIL_CONFIG names a file. */
export const SYSTEM_CONFIG = '/etc/svcmail/svcmail.conf';

/** --config, else SVCMAIL_CONFIG (an empty one counts as unset), else the packaged file when it exists. */
export function configFileOf(opts: GlobalOptions): string | undefined {
  return opts.config ?? (process.env.SVCMAIL_CONFIG || undefined) ?? (existsSync(SYSTEM_CONFIG) ? SYSTEM_CONFIG : undefined);
}

export function configFrom(opts: GlobalOptions): Config {
  try {
    return loadConfig({ file: configFileOf(opts), set: opts.set });
  } catch (e) {
    if (e instanceof ConfigError) throw new CliError(`configuration error: ${e.message}`, EXIT.config);
    throw e;
  }
}

export const collect = (value: string, previous: string[] = []): string[] => [...previous, value];

/** A plain text table: a header row, then one line per row, columns padded. */
export function table(rows: Record<string, unknown>[], columns: string[]): string {
  const cell = (v: unknown) => (v === undefined || v === null ? '' : typeof v === 'object' ? JSON.stringify(v) : String(v));
  const width = columns.map((c) => Math.max(c.length, ...rows.map((r) => cell(r[c]).length)));
  const line = (vals: string[]) =>
    vals
      .map((v, i) => (i === vals.length - 1 ? v : v.padEnd(width[i])))
      .join('  ')
      .trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n');
}
