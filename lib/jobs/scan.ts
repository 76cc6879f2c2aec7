import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import { IngestEntryModel, deliverEntry, type IngestEntry, type PrepareCache, type WorkerDeps } from '../ingest/index.js';
import type { Row } from '../storage/index.js';
import { countEvent, type CounterName } from '../admin/counters.js';

export interface ScanRound {
  claimed: number;
  finished: number;
  retried: number;
  failed: number;
}

/** The verdict class of a finished entry for svcmail_scan_verdicts_total (Spec: Inbound message state table). */
export function verdictClass(v: Record<string, unknown> | null | undefined): 'clean' | 'spam' | 'suspect' | 'virus' | 'failed' | null {
  if (!v) return null;
  if (v.virus) return 'virus';
  if (v.virusScanFailed || (Array.isArray(v.symbols) && v.symbols.includes('SCAN_ENGINE_UNAVAILABLE'))) return 'failed';
  return v.spam === 'spam' || v.spam === 'suspect' ? v.spam : 'clean';
}

export const workerId = (): string => `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;

async function pool<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: Math.min(size, items.length) }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

/**
 * The scan job (Spec: Inbound message; every 10 s and when woken). Claims queued entries with a
 * lease, so several workers are safe and a killed worker's entries come back when the lease ends;
 * a failure retries after retry_backoff_seconds × attempts, then the entry is failed.
 */
export async function runScanRound(deps: WorkerDeps, owner: string): Promise<ScanRound> {
  const repo = deps.store.repo<IngestEntry>(IngestEntryModel);
  const cfg = deps.config;
  const entries = await repo.claim({ state: 'queued', nextAttemptAt: { $lte: new Date() } }, {
    owner, leaseMs: cfg.get('mail:jobs:scan:lease_seconds') * 1000, limit: cfg.get('mail:jobs:scan:batch_size'), sort: [{ field: 'createdAt', dir: 'asc' }],
  });
  const round: ScanRound = { claimed: entries.length, finished: 0, retried: 0, failed: 0 };
  const cache: PrepareCache = new Map();
  // Counted where the job decides, once per entry, and written once per round (not per message).
  const counts = new Map<string, { name: CounterName; labels: Record<string, string>; n: number }>();
  const count = (name: CounterName, labels: Record<string, string>) => {
    const key = `${name}|${JSON.stringify(labels)}`;
    const c = counts.get(key) ?? { name, labels, n: 0 };
    c.n += 1;
    counts.set(key, c);
  };
  await pool(entries, cfg.get('mail:jobs:scan:concurrency'), async (entry: Row<IngestEntry>) => {
    try {
      const patch = await deliverEntry(deps, entry, cache);
      await repo.release(entry.uid, owner, patch);
      round.finished++;
      const verdict = verdictClass(patch.verdict);
      if (verdict) count('svcmail_scan_verdicts_total', { verdict });
      if (patch.state) count('svcmail_deliveries_total', { outcome: patch.state });
    } catch (e) {
      const attempts = entry.attempts + 1;
      const failed = attempts >= cfg.get('mail:ingest:max_attempts');
      const message = (e as Error)?.message ?? String(e);
      deps.log.warn({ entry: entry.uid, attempts, err: message }, failed ? 'ingest entry failed for good' : 'ingest entry failed; retrying later');
      await repo.release(entry.uid, owner, failed
        ? { attempts, state: 'failed', lastError: message.slice(0, 2000), finishedAt: new Date() }
        : { attempts, lastError: message.slice(0, 2000), nextAttemptAt: new Date(Date.now() + cfg.get('mail:ingest:retry_backoff_seconds') * 1000 * attempts) }).catch(() => undefined);
      if (failed) {
        round.failed++;
        count('svcmail_deliveries_total', { outcome: 'failed' });
      } else round.retried++;
    }
  });
  // A crash before this line loses the round's counts: metrics, not records.
  for (const c of counts.values()) await countEvent(deps, c.name, c.labels, c.n);
  return round;
}

/** Runs rounds until the queue has nothing due (used on wake-up and by tests). */
export async function drainQueue(deps: WorkerDeps, owner: string, maxRounds = 1000): Promise<ScanRound> {
  const total: ScanRound = { claimed: 0, finished: 0, retried: 0, failed: 0 };
  for (let i = 0; i < maxRounds; i++) {
    const r = await runScanRound(deps, owner);
    total.claimed += r.claimed;
    total.finished += r.finished;
    total.retried += r.retried;
    total.failed += r.failed;
    if (r.claimed === 0) break;
  }
  return total;
}
