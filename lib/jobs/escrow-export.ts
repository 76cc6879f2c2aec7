import {
  appendEscrowAudit,
  buildExportArchive,
  MatterExportModel,
  MatterModel,
  removeExportFiles,
  type Matter,
  type MatterExport,
} from '../escrow/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';

// The matter-export job (Spec: /api/escrow/ matter-export-requests). Builds pending exports with a
// lease (a killed worker's export comes back when the lease ends), retries a failed build after a
// backoff up to mail:escrow:export_max_attempts, and expires ready exports after
// mail:escrow:export_ttl_hours or once their matter closed, deleting the files. Every move is in
// the escrow audit log.

export const WORKER_ACTOR = 'svcmail-worker';

export interface ExportRound {
  claimed: number;
  built: number;
  retried: number;
  failed: number;
  expired: number;
}

const audit = (deps: Deps, action: string, exp: Row<MatterExport>, details: Record<string, unknown> = {}) =>
  appendEscrowAudit(deps.store, deps.config, {
    actor: WORKER_ACTOR,
    action,
    scopeUid: exp.scopeUid,
    details: { uid: exp.uid, matterUid: exp.matterUid, ...details },
  });

async function expire(deps: Deps, exp: Row<MatterExport>, reason: string, owner?: string): Promise<void> {
  const repo = deps.store.repo<MatterExport>(MatterExportModel);
  if (owner) await repo.release(exp.uid, owner, { state: 'expired' });
  else await repo.update(exp.uid, { state: 'expired' }, { expectedVersion: exp.version });
  await removeExportFiles(deps.config, exp.uid);
  await audit(deps, 'export.expire', exp, { reason });
}

/** Ready exports past their time or of a closed matter. */
async function sweep(deps: Deps): Promise<number> {
  const repo = deps.store.repo<MatterExport>(MatterExportModel);
  const ready = await repo.list({ filter: { state: 'ready' }, limit: 1000 });
  if (!ready.length) return 0;
  const matters = await deps.store
    .repo<Matter>(MatterModel)
    .list({ filter: { uid: { $in: [...new Set(ready.map((e) => e.matterUid))] } }, limit: 1000 });
  const closed = new Set(matters.filter((m) => m.state !== 'open').map((m) => m.uid));
  let n = 0;
  for (const exp of ready) {
    const why = closed.has(exp.matterUid)
      ? 'the matter is closed'
      : exp.expiresAt && new Date(exp.expiresAt).getTime() <= Date.now()
        ? 'export_ttl_hours passed'
        : null;
    if (!why) continue;
    try {
      await expire(deps, exp, why);
      n++;
    } catch (e) {
      deps.log.warn({ export: exp.uid, err: (e as Error).message }, 'expiring a matter export failed; retrying next round');
    }
  }
  return n;
}

export async function runEscrowExportRound(deps: Deps, owner: string): Promise<ExportRound> {
  const cfg = deps.config;
  const round: ExportRound = { claimed: 0, built: 0, retried: 0, failed: 0, expired: await sweep(deps) };
  const repo = deps.store.repo<MatterExport>(MatterExportModel);
  const jobs = await repo.claim(
    { state: 'pending', nextAttemptAt: { $lte: new Date() } },
    {
      owner,
      leaseMs: cfg.get('mail:jobs:escrow_export:lease_seconds') * 1000,
      limit: 4,
      sort: [{ field: 'nextAttemptAt', dir: 'asc' }],
    },
  );
  round.claimed = jobs.length;
  for (const exp of jobs) {
    const matter = await deps.store.repo<Matter>(MatterModel).get(exp.matterUid);
    if (matter?.state !== 'open') {
      await expire(deps, exp, 'the matter is closed', owner);
      round.expired++;
      continue;
    }
    try {
      const built = await buildExportArchive(deps, exp);
      const now = new Date();
      await repo.release(exp.uid, owner, {
        ...built,
        state: 'ready',
        readyAt: now,
        expiresAt: new Date(now.getTime() + cfg.get('mail:escrow:export_ttl_hours') * 3_600_000),
        lastError: null,
      });
      await audit(deps, 'export.ready', exp, {
        messageCount: built.messageCount,
        mboxSha256: built.mboxSha256,
        manifestSha256: built.manifestSha256,
      });
      round.built++;
    } catch (e) {
      const attempts = exp.attempts + 1;
      const failed = attempts >= cfg.get('mail:escrow:export_max_attempts');
      const message = ((e as Error)?.message ?? String(e)).slice(0, 2000);
      deps.log.warn(
        { export: exp.uid, attempts, err: message },
        failed ? 'matter export failed for good' : 'matter export failed; retrying later',
      );
      await repo.release(
        exp.uid,
        owner,
        failed
          ? { attempts, state: 'failed', lastError: message }
          : {
              attempts,
              lastError: message,
              nextAttemptAt: new Date(Date.now() + cfg.get('mail:jobs:escrow_export:interval_seconds') * 1000 * attempts),
            },
      );
      if (failed) {
        await audit(deps, 'export.fail', exp, { attempts });
        round.failed++;
      } else round.retried++;
    }
  }
  return round;
}

/** Rounds until nothing is due (wake-ups and tests). */
export async function drainEscrowExports(deps: Deps, owner: string, maxRounds = 100): Promise<ExportRound> {
  const total: ExportRound = { claimed: 0, built: 0, retried: 0, failed: 0, expired: 0 };
  for (let i = 0; i < maxRounds; i++) {
    const r = await runEscrowExportRound(deps, owner);
    for (const k of Object.keys(total) as Array<keyof ExportRound>) total[k] += r[k];
    if (r.claimed === 0) break;
  }
  return total;
}

export interface ExportLoop {
  wake(): void;
  /** Stops scheduling; resolves when the round in progress has finished. */
  stop(): Promise<void>;
}

/** The job every mail:jobs:escrow_export:interval_seconds and at once when woken; rounds never overlap. */
export function startEscrowExportLoop(deps: Deps, owner: string): ExportLoop {
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drainEscrowExports(deps, owner)
      .then((r) => {
        if (r.claimed || r.expired) deps.log.debug({ ...r }, 'matter export round');
      })
      .catch((e: unknown) => deps.log.error({ err: (e as Error).message }, 'matter export round failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          run();
        }
      });
  };
  const timer = setInterval(run, deps.config.get('mail:jobs:escrow_export:interval_seconds') * 1000);
  setImmediate(run);
  return {
    wake: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
