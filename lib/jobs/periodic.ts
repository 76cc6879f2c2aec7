import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import type { Deps } from '../context/index.js';
import { defineModel } from '../storage/index.js';

// Jobs that run once per period for the whole deployment (retention, clean-ups). ARCHITECTURE:
// "every job claims work with a lease" — here the work is the job's schedule record: the copy that
// claims it while it is due runs the job, the others skip; a crashed holder's run is taken over
// when its lease ends.

export const jobScheduleFields = {
  job: z.string().min(1).max(100),
  nextRunAt: z.date(),
  lastRunAt: z.date().nullable().default(null),
  lastResult: z.record(z.string(), z.unknown()).nullable().default(null),
  lastError: z.string().nullable().default(null),
};
export type JobSchedule = z.infer<z.ZodObject<typeof jobScheduleFields>>;
export const JobScheduleModel = defineModel({
  name: 'job_schedule',
  table: 'job_schedules',
  fields: jobScheduleFields,
  lease: true,
  indexes: [{ fields: ['job'], unique: true }],
});

export interface PeriodicJob<R extends Record<string, unknown>> {
  name: string;
  periodMs: number;
  leaseMs: number;
  run(): Promise<R>;
}

const uidOf = (job: string) => `job-${job}`;

/**
 * Runs the job if it is due and no other copy holds it. Answers null when it did not run. A failed
 * run is tried again after a tenth of the period (at least a minute, at most the period).
 */
export async function runIfDue<R extends Record<string, unknown>>(
  deps: Pick<Deps, 'store' | 'log'>,
  job: PeriodicJob<R>,
  owner: string,
  now = new Date(),
): Promise<R | null> {
  const repo = deps.store.repo<JobSchedule>(JobScheduleModel);
  const uid = uidOf(job.name);
  if (!(await repo.get(uid))) {
    try {
      await repo.create({ uid, job: job.name, nextRunAt: now, lastRunAt: null, lastResult: null, lastError: null } as JobSchedule & {
        uid: string;
      });
    } catch (e) {
      if (!(isApiError(e) && e.code === 'api-112')) throw e; // another copy made it
    }
  }
  const [claimed] = await repo.claim({ uid, nextRunAt: { $lte: now } }, { owner, leaseMs: job.leaseMs, limit: 1 });
  if (!claimed) return null;
  try {
    const result = await job.run();
    await repo.release(uid, owner, {
      nextRunAt: new Date(Date.now() + job.periodMs),
      lastRunAt: new Date(),
      lastResult: result,
      lastError: null,
    });
    return result;
  } catch (e) {
    const retry = Math.min(job.periodMs, Math.max(60_000, job.periodMs / 10));
    await repo
      .release(uid, owner, { nextRunAt: new Date(Date.now() + retry), lastError: (e as Error).message.slice(0, 2000) })
      .catch(() => undefined);
    throw e;
  }
}

export interface PeriodicLoop {
  stop(): Promise<void>;
}

/** Looks for a due run every minute (or every period when shorter); rounds never overlap. */
export function startPeriodicJob<R extends Record<string, unknown>>(
  deps: Pick<Deps, 'store' | 'log'>,
  job: PeriodicJob<R>,
  owner: string,
): PeriodicLoop {
  let running: Promise<void> | null = null;
  let stopped = false;
  const tick = () => {
    if (stopped || running) return;
    running = runIfDue(deps, job, owner)
      .then((r) => {
        if (r) deps.log.info({ job: job.name, result: r as Record<string, unknown> }, 'periodic job ran');
      })
      .catch((e: unknown) => deps.log.error({ job: job.name, err: (e as Error).message }, `${job.name} job failed`))
      .finally(() => {
        running = null;
      });
  };
  const timer = setInterval(tick, Math.min(job.periodMs, 60_000));
  timer.unref();
  setImmediate(tick);
  return {
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
