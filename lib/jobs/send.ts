import { advance, adoptHandoffs, closeHandoff, OutboundJobModel, processReceipts, type OutboundJob, type SendDeps } from '../send/index.js';
import type { Row } from '../storage/index.js';

export interface SendRound {
  claimed: number;
  sent: number;
  retrying: number;
  failed: number;
  errors: number;
}

async function pool<T>(items: T[], size: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(size, items.length) }, async () => {
      while (next < items.length) await fn(items[next++]);
    }),
  );
}

/**
 * The send job (Spec: Outbound message — Outbox, scheduled send; Limits — concurrency). Adopts the
 * inbound path's hand-offs, then claims due Outbox records with a lease (several workers are safe;
 * a killed worker's records come back when the lease ends) and advances each.
 */
export async function runSendRound(deps: SendDeps, owner: string): Promise<SendRound> {
  const cfg = deps.config;
  // Read receipts owed since the last round become hand-offs first, so this round adopts them.
  await processReceipts(deps, cfg.get('mail:jobs:send:batch_size'));
  await adoptHandoffs(deps, cfg.get('mail:jobs:send:batch_size'));
  const repo = deps.store.repo<OutboundJob>(OutboundJobModel);
  const jobs = await repo.claim(
    { state: { $in: ['queued', 'handing', 'handed'] }, nextAttemptAt: { $lte: new Date() } },
    {
      owner,
      leaseMs: cfg.get('mail:jobs:send:lease_seconds') * 1000,
      limit: cfg.get('mail:jobs:send:batch_size'),
      sort: [{ field: 'nextAttemptAt', dir: 'asc' }],
    },
  );
  const round: SendRound = { claimed: jobs.length, sent: 0, retrying: 0, failed: 0, errors: 0 };
  await pool(jobs, cfg.get('mail:jobs:send:concurrency'), async (job: Row<OutboundJob>) => {
    try {
      const j = await advance(deps, job);
      await closeHandoff(deps, j);
      await repo.release(j.uid, owner);
      if (j.state === 'sent') round.sent++;
      else if (j.state === 'queued') round.retrying++;
      else round.failed++;
    } catch (e) {
      round.errors++;
      deps.log.warn({ job: job.uid, err: (e as Error).message }, 'send job step failed; retrying later');
      const backoff = cfg.get('mail:send:retry_backoff_seconds') * 1000 * Math.max(1, job.attempts);
      // Only a record still queued is pushed back; one left in handing is decided by the next claim.
      await repo
        .release(job.uid, owner, { nextAttemptAt: new Date(Date.now() + backoff), lastError: (e as Error).message.slice(0, 2000) })
        .catch(() => undefined);
    }
  });
  return round;
}

/** Rounds until nothing is due (wake-ups, tests, the bench). */
export async function drainSends(deps: SendDeps, owner: string, maxRounds = 1000): Promise<SendRound> {
  const total: SendRound = { claimed: 0, sent: 0, retrying: 0, failed: 0, errors: 0 };
  for (let i = 0; i < maxRounds; i++) {
    const r = await runSendRound(deps, owner);
    for (const k of Object.keys(total) as Array<keyof SendRound>) total[k] += r[k];
    if (r.claimed === 0) break;
  }
  return total;
}

export interface SendLoop {
  wake(): void;
  /** Stops scheduling and waits up to drain_ms for the round in progress (Spec: Limits, drain_ms). */
  stop(): Promise<void>;
}

export function startSendLoop(deps: SendDeps, owner: string): SendLoop {
  const periodMs = deps.config.get('mail:jobs:send:interval_seconds') * 1000;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drainSends(deps, owner)
      .then((r) => {
        if (r.claimed) deps.log.debug({ ...r }, 'send round');
      })
      .catch((e: unknown) => deps.log.error({ err: (e as Error).message }, 'send round failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          run();
        }
      });
  };
  const timer = setInterval(run, periodMs);
  setImmediate(run);
  return {
    wake: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      if (!running) return;
      let t: NodeJS.Timeout | undefined;
      await Promise.race([
        running,
        new Promise<void>((r) => {
          t = setTimeout(r, deps.config.get('mail:jobs:send:drain_ms'));
        }),
      ]);
      clearTimeout(t);
    },
  };
}
