import type { Config } from '../config/index.js';
import type { Logger } from '../log/index.js';
import { clamdScan, type VirusResult } from './clamd.js';
import { rspamdCheck, ScannerUnreachable, type SpamInput, type SpamResult } from './rspamd.js';

export { sanitizeMailHtml } from './sanitize.js';
export { rspamdCheck, ScannerUnreachable, isConnectFailure, type SpamResult, type SpamInput } from './rspamd.js';
export { clamdScan, type VirusResult } from './clamd.js';
export { AdaptiveLimit, scanLimitOf } from './limit.js';

export const SCAN_ENGINE_UNAVAILABLE = 'SCAN_ENGINE_UNAVAILABLE';

/** The combined verdict of one message (Spec: Inbound message state table). */
export interface ScanVerdict {
  spam: 'clean' | 'suspect' | 'spam';
  /** true: a virus was found, or the virus scan failed (both go to Quarantine). */
  quarantine: boolean;
  virus: string | null;
  virusScanFailed: boolean;
  symbols: string[];
  score: number | null;
  /** Scanners treated as clean because nothing answered (development only). */
  devFallback: string[];
}

/** A scanner port: the real clients by default; the bench can swap in the dev clean scanner. */
export interface Scanners {
  spam(input: SpamInput): Promise<SpamResult>;
  virus(raw: Buffer): Promise<VirusResult>;
}

/** Development: how long a scanner that could not be connected to is not tried again. */
export const DEV_UNREACHABLE_RECHECK_MS = 5000;

/**
 * The real clients. In development a scanner that cannot be connected to (not installed on a
 * developer's machine) is tried again only every DEV_UNREACHABLE_RECHECK_MS: meanwhile it answers
 * ScannerUnreachable at once, which scanMessage turns into the development clean fallback — one
 * refused connection per scanner and period instead of two per message. Everywhere else every
 * message tries the scanner (fail closed per message, and a scanner that comes back is used at once).
 */
export function realScanners(config: Config, now: () => number = Date.now): Scanners {
  const downUntil = { rspamd: 0, clamd: 0 };
  const guarded = <R>(name: 'rspamd' | 'clamd', call: () => Promise<R>): Promise<R> => {
    if (!config.isDevelopment) return call();
    if (now() < downUntil[name])
      return Promise.reject(new ScannerUnreachable(name, new Error('not answering (development: checked again shortly)')));
    return call().catch((e: unknown) => {
      if (e instanceof ScannerUnreachable) downUntil[name] = now() + DEV_UNREACHABLE_RECHECK_MS;
      throw e;
    });
  };
  return { spam: (i) => guarded('rspamd', () => rspamdCheck(config, i)), virus: (raw) => guarded('clamd', () => clamdScan(config, raw)) };
}

/**
 * Scans a message with fail-closed policy. Development only (NODE_ENV dev, development, test): a
 * scanner that cannot be connected to at all counts as clean, with a logged warning. Everywhere
 * else: rspamd unreachable → SUSPECT with SCAN_ENGINE_UNAVAILABLE; clamd failing → Quarantine.
 */
export async function scanMessage(config: Config, log: Logger, scanners: Scanners, input: SpamInput): Promise<ScanVerdict> {
  const devFallback: string[] = [];
  const [spamR, virusR] = await Promise.allSettled([scanners.spam(input), scanners.virus(input.raw)]);
  let spam: ScanVerdict['spam'] = 'clean';
  let symbols: string[] = [];
  let score: number | null = null;
  if (spamR.status === 'fulfilled') {
    ({ verdict: spam, symbols, score } = spamR.value);
  } else if (config.isDevelopment && spamR.reason instanceof ScannerUnreachable) {
    devFallback.push('rspamd');
    log.warn({ err: spamR.reason.message }, 'rspamd cannot be connected to: treating the message as clean (development only)');
  } else {
    spam = 'suspect';
    symbols = [SCAN_ENGINE_UNAVAILABLE];
    log.warn({ err: (spamR.reason as Error)?.message }, 'spam scan failed: verdict SUSPECT (SCAN_ENGINE_UNAVAILABLE)');
  }
  let virus: string | null = null;
  let virusScanFailed = false;
  if (virusR.status === 'fulfilled') {
    virus = virusR.value.signature;
  } else if (config.isDevelopment && virusR.reason instanceof ScannerUnreachable) {
    devFallback.push('clamd');
    log.warn({ err: virusR.reason.message }, 'clamd cannot be connected to: treating the message as clean (development only)');
  } else {
    virusScanFailed = true;
    log.warn({ err: (virusR.reason as Error)?.message }, 'virus scan failed: the message goes to Quarantine');
  }
  return { spam, quarantine: virus !== null || virusScanFailed, virus, virusScanFailed, symbols, score, devFallback };
}

/** The development clean scanner (benchmarks and development without scanners). */
export const cleanScanners: Scanners = {
  spam: async () => ({ verdict: 'clean', action: 'no action', score: 0, symbols: [] }),
  virus: async () => ({ infected: false, signature: null }),
};
