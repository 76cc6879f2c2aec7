import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { AuditEntryModel, type AuditEntry } from '../audit/index.js';
import { ApiError } from '../errors/index.js';
import type { ModelDef, Patch, Row } from '../storage/index.js';
import { runErasure, type ErasureDeps } from './erasure-job.js';
import { buildExport, JobAborted, type Touch } from './export-job.js';
import { exportPath, lifecycleDir, removeFile, uploadPath } from './files.js';
import { runImport } from './import-job.js';
import { InputError } from './import-sources.js';
import {
  ErasureRequestModel,
  ExportRequestModel,
  ImpersonationSessionModel,
  ImportRequestModel,
  type ErasureRequest,
  type ExportRequest,
  type ImportRequest,
} from './models.js';

export type LifecycleDeps = ErasureDeps;

export interface LifecycleRound {
  exports: number;
  imports: number;
  erasures: number;
  failed: number;
  expired: number;
}

type Job = { uid: string; state: string; mailboxUid: string };
const STALE_UPLOAD_MS = 24 * 3_600_000;

/** What a failed job tells its owner: our own refusals verbatim, never internals. */
function failureText(e: unknown): string {
  if (e instanceof InputError || e instanceof ApiError) return e.message.slice(0, 2000);
  return 'internal error; the worker log has the details';
}

/**
 * Claims pending (or lease-expired running) records of one kind with a lease and runs them one at a
 * time. The lease is renewed whenever the job reports progress; a job whose record was deleted or
 * taken over stops at its next report.
 */
async function claimAndRun<T extends Job>(
  deps: LifecycleDeps,
  owner: string,
  model: ModelDef,
  entity: string,
  run: (rec: Row<T>, touch: Touch) => Promise<Record<string, unknown>>,
  after?: (rec: Row<T>, outcome: 'done' | 'failed' | 'gone') => Promise<void>,
): Promise<{ ran: number; failed: number }> {
  const repo = deps.store.repo<T>(model);
  const leaseMs = deps.config.get('mail:jobs:lifecycle:lease_seconds') * 1000;
  const claimed = await repo.claim({ state: { $in: ['pending', 'running'] } }, { owner, leaseMs, limit: 2 });
  let failed = 0;
  const publish = async (uid: string) => {
    const rec = await repo.get(uid);
    if (!rec) return;
    const { claimedBy: _c, leaseUntil: _l, ...data } = rec as Row<T> & { claimedBy?: unknown; leaseUntil?: unknown };
    deps.events.publish(model === ErasureRequestModel ? [uid] : [uid, rec.mailboxUid], { type: entity, action: 'update', data });
  };
  for (const rec of claimed) {
    const touch: Touch = async (patch) =>
      (await repo.updateMany({ uid: rec.uid, claimedBy: owner }, {
        ...patch,
        leaseUntil: new Date(Date.now() + leaseMs),
      } as unknown as Patch<T>)) > 0;
    if (!(await touch({ state: 'running' }))) continue;
    await publish(rec.uid);
    let outcome: 'done' | 'failed' | 'gone' = 'done';
    try {
      const patch = await run({ ...rec, state: 'running' }, touch);
      if (!(await repo.release(rec.uid, owner, { ...patch, finishedAt: new Date() } as unknown as Patch<T>))) outcome = 'gone';
    } catch (e) {
      if (e instanceof JobAborted) {
        outcome = 'gone';
      } else {
        outcome = 'failed';
        failed += 1;
        if (!(e instanceof InputError))
          deps.log.error({ err: (e as Error)?.message, stack: (e as Error)?.stack, uid: rec.uid, entity }, 'lifecycle job failed');
        await repo
          .release(rec.uid, owner, { state: 'failed', error: failureText(e), finishedAt: new Date() } as unknown as Patch<T>)
          .catch(() => undefined);
      }
    }
    await after?.(rec, outcome);
    await publish(rec.uid);
  }
  return { ran: claimed.length, failed };
}

async function notBeingErased(deps: LifecycleDeps, mailboxUid: string): Promise<void> {
  if (await deps.store.repo(ErasureRequestModel).count({ mailboxUid, state: { $in: ['pending', 'running'] } }))
    throw new InputError('the mailbox is being erased');
}

/** Ready exports past their time lose their archive; impersonation sessions past theirs end. */
async function expire(deps: LifecycleDeps): Promise<number> {
  const now = new Date();
  const exports = deps.store.repo<ExportRequest>(ExportRequestModel);
  let n = 0;
  for (const e of await exports.list({ filter: { state: 'ready', expiresAt: { $lt: now } }, limit: 1000 })) {
    // State first: from here the download route refuses, then the file goes.
    if (await exports.updateMany({ uid: e.uid, state: 'ready' }, { state: 'expired', archiveBytes: 0 })) {
      await removeFile(exportPath(deps.config, e.uid));
      deps.events.publish([e.uid, e.mailboxUid], {
        type: 'dataExportRequest',
        action: 'update',
        data: { uid: e.uid, mailboxUid: e.mailboxUid, state: 'expired' },
      });
      n += 1;
    }
  }
  const sessions = deps.store.repo(ImpersonationSessionModel);
  n += await sessions.updateMany({ state: { $in: ['pending', 'active'] }, expiresAt: { $lt: now } }, { state: 'expired' });
  // Uploads cut off mid-way (a client gone, a daemon restarted) leave temporary files behind.
  const dir = lifecycleDir(deps.config, 'imports');
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith('.tmp-')) continue;
    const st = await stat(join(dir, name)).catch(() => null);
    if (st && now.getTime() - st.mtimeMs > STALE_UPLOAD_MS) await removeFile(join(dir, name));
  }
  return n;
}

/** One round of the data lifecycle job (worker daemon): erasures, exports, imports, expiry. */
export async function runLifecycleRound(deps: LifecycleDeps, owner: string): Promise<LifecycleRound> {
  const cfg = deps.config;
  // Erasures first: an export or import of a mailbox being erased is deleted with it, never run.
  const er = await claimAndRun<Job & ErasureRequest>(deps, owner, ErasureRequestModel, 'erasureRequest', async (rec, touch) => {
    const r = await runErasure(deps, rec, touch);
    // The outcome in the audit log too, next to the administrator's request (actor: the job).
    await deps.store.repo<AuditEntry>(AuditEntryModel).create({
      actor: `job:${owner}`,
      actorVia: 'worker',
      action: 'erasure-requests.completed',
      resource: 'erasure-requests',
      resourceUid: rec.uid,
      ip: null,
      requestId: null,
      before: null,
      after: null,
      details: {
        address: rec.address,
        deletedRecords: Object.values(r.deleted).reduce((a, b) => a + b, 0),
        blobFilesRemoved: r.blobFilesRemoved,
      },
    });
    return { state: 'completed', ...r, error: null };
  });
  const ex = await claimAndRun<Job & ExportRequest>(
    deps,
    owner,
    ExportRequestModel,
    'dataExportRequest',
    async (rec, touch) => {
      await notBeingErased(deps, rec.mailboxUid);
      const r = await buildExport(deps, rec, touch);
      return {
        state: 'ready',
        ...r,
        progress: { done: r.messages, total: r.messages },
        expiresAt: new Date(Date.now() + cfg.get('mail:data_export:ttl_hours') * 3_600_000),
        error: null,
      };
    },
    async (rec, outcome) => {
      if (outcome === 'gone' && !(await deps.store.repo(ExportRequestModel).get(rec.uid))) await removeFile(exportPath(cfg, rec.uid));
    },
  );
  const im = await claimAndRun<Job & ImportRequest>(
    deps,
    owner,
    ImportRequestModel,
    'mailboxImportRequest',
    async (rec, touch) => {
      await notBeingErased(deps, rec.mailboxUid);
      const counts = await runImport(deps, rec, touch);
      return { state: 'completed', ...counts, error: null };
    },
    async (rec, outcome) => {
      // The upload is kept only while the job may still run; a finished or deleted import drops it.
      if (outcome !== 'gone' || !(await deps.store.repo(ImportRequestModel).get(rec.uid))) await removeFile(uploadPath(cfg, rec.uid));
    },
  );
  const expired = await expire(deps);
  return { exports: ex.ran, imports: im.ran, erasures: er.ran, failed: ex.failed + im.failed + er.failed, expired };
}

/** Rounds until nothing is left to claim (wake-ups and tests). */
export async function drainLifecycle(deps: LifecycleDeps, owner: string, maxRounds = 100): Promise<LifecycleRound> {
  const total: LifecycleRound = { exports: 0, imports: 0, erasures: 0, failed: 0, expired: 0 };
  for (let i = 0; i < maxRounds; i++) {
    const r = await runLifecycleRound(deps, owner);
    for (const k of Object.keys(total) as Array<keyof LifecycleRound>) total[k] += r[k];
    if (!r.exports && !r.imports && !r.erasures) break;
  }
  return total;
}

export interface LifecycleLoop {
  wake(): void;
  stop(): Promise<void>;
}

/** The periodic loop in the worker daemon; a round in progress is finished (or left to its lease) on stop. */
export function startLifecycleLoop(deps: LifecycleDeps, owner: string): LifecycleLoop {
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drainLifecycle(deps, owner)
      .then((r) => {
        if (r.exports || r.imports || r.erasures || r.expired) deps.log.info({ ...r }, 'lifecycle round');
      })
      .catch((e: unknown) => deps.log.error({ err: (e as Error).message }, 'lifecycle round failed'))
      .finally(() => {
        running = null;
        if (again) {
          again = false;
          run();
        }
      });
  };
  const timer = setInterval(run, deps.config.get('mail:jobs:lifecycle:interval_seconds') * 1000);
  setImmediate(run);
  return {
    wake: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      // A long export or erasure is not waited for: its lease runs out and another worker resumes it.
      if (running) await Promise.race([running, new Promise((r) => setTimeout(r, 2000).unref())]);
    },
  };
}
