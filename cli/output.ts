import { existsSync } from 'node:fs';
import { ConfigError, loadConfig, type Config } from '../lib/config/index.js';

export interface GlobalOptions {
  config?: string;
  set?: string[];
  json?: boolean;
}

/** Exit codes (sysexits where one fits). */
export const EXIT = { ok: 0, failure: 1, usage: 64, unavailable: 69, software: 70, config: 78 } as const;

export class CliError extends Error {
  constructor(message: string, readonly exitCode: number = EXIT.failure) {
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
  const line = (vals: string[]) => vals.map((v, i) => (i === vals.length - 1 ? v : v.padEnd(width[i]))).join('  ').trimEnd();
  return [line(columns.map((c) => c.toUpperCase())), ...rows.map((r) => line(columns.map((c) => cell(r[c]))))].join('\n');
}
