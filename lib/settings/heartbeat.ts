import { createHash } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { isApiError } from '../errors/index.js';
import type { Deps } from '../context/index.js';
import { defineModel, type Row, type Store } from '../storage/index.js';
import { PRODUCT } from '../version.js';

// Daemon heartbeats (Spec: GET /api/admin/diagnostics — daemon heartbeats; svcmail doctor). Each
// process of each daemon records itself every mail:heartbeat:interval_seconds; a record silent for
// three of its own periods counts as down. Records are per process, so several copies of a daemon
// on several hosts all show.

export const heartbeatFields = {
  /** api, worker, push, protocols (or any later daemon). */
  daemon: z.string().min(1).max(50),
  /** host:pid — one record per process. */
  instance: z.string().min(1).max(300),
  host: z.string().max(255),
  pid: z.number().int().nonnegative(),
  /** The product version the process runs. */
  productVersion: z.string().max(100),
  startedAt: z.date(),
  lastSeenAt: z.date(),
  /** The writer's period, so readers judge each record by its own clock. */
  intervalSeconds: z.number().positive(),
  /** Set on a clean shutdown: a stopped process is not "missing heartbeats". */
  stoppedAt: z.date().nullable().default(null),
  /** Daemon figures worth showing (the push daemon: connections, channels). */
  details: z.record(z.string(), z.unknown()).default({}),
};
export type Heartbeat = z.infer<z.ZodObject<typeof heartbeatFields>>;
export const HeartbeatModel = defineModel({
  name: 'daemon_heartbeat',
  table: 'daemon_heartbeats',
  fields: heartbeatFields,
  indexes: [{ fields: ['daemon'] }, { fields: ['lastSeenAt'] }],
});

/** A process whose record is older than this many of its periods counts as down. */
export const MISSED_BEATS = 3;
/** Records of processes gone this long are dropped by the next writer. */
const FORGET_MS = 7 * 24 * 3600 * 1000;

export const instanceUid = (instance: string): string => createHash('sha256').update(`heartbeat\0${instance}`).digest('hex').slice(0, 32);

/** Whether a heartbeat is recent: written within MISSED_BEATS of its own periods and not stopped. */
export function isAlive(h: Pick<Heartbeat, 'lastSeenAt' | 'intervalSeconds' | 'stoppedAt'>, now = Date.now()): boolean {
  return !h.stoppedAt && now - new Date(h.lastSeenAt).getTime() <= MISSED_BEATS * h.intervalSeconds * 1000;
}

export interface HeartbeatWriter {
  /** Writes one heartbeat now (also what the timer does). */
  beat(): Promise<void>;
  /** Stops the timer and records a clean stop. */
  stop(): Promise<void>;
}

export interface HeartbeatOptions {
  /** Figures recorded with every beat (must be cheap and JSON-safe). */
  details?: () => Record<string, unknown>;
  /** Defaults to host:pid. */
  instance?: string;
}

/**
 * Starts recording the heartbeat of this process for `daemon`. Failures are logged, never thrown:
 * a datastore hiccup must not take a daemon down. Call it from a daemon's start, stop() on close.
 * The protocols daemon calls startHeartbeat(deps, 'protocols', { details: () => ({ … }) }) the same way.
 */
export function startHeartbeat(deps: Pick<Deps, 'config' | 'store' | 'log'>, daemon: string, opts: HeartbeatOptions = {}): HeartbeatWriter {
  const host = hostname();
  const instance = opts.instance ?? `${host}:${process.pid}`;
  const uid = instanceUid(instance);
  const intervalSeconds = deps.config.get('mail:heartbeat:interval_seconds');
  const startedAt = new Date();
  const repo = deps.store.repo<Heartbeat>(HeartbeatModel);
  let pending: Promise<void> = Promise.resolve();
  let stopped = false;

  const write = async (patch: Partial<Heartbeat>): Promise<void> => {
    const now = new Date();
    const fields = { lastSeenAt: now, intervalSeconds, details: opts.details?.() ?? {}, ...patch };
    if (await repo.get(uid)) {
      await repo.update(uid, fields);
      return;
    }
    try {
      await repo.create({
        uid,
        daemon,
        instance,
        host,
        pid: process.pid,
        productVersion: PRODUCT.version,
        startedAt,
        stoppedAt: null,
        ...fields,
      } as Heartbeat & { uid: string });
    } catch (e) {
      if (!(isApiError(e) && e.code === 'api-112')) throw e;
      await repo.update(uid, fields);
    }
    // The first beat of a process tidies records of processes long gone.
    await repo.deleteMany({ lastSeenAt: { $lt: new Date(now.getTime() - FORGET_MS) } });
  };
  const beat = (): Promise<void> => {
    pending = pending.then(() =>
      write({}).catch((e: unknown) => deps.log.warn({ err: (e as Error).message, daemon }, 'heartbeat not recorded')),
    );
    return pending;
  };
  const timer = setInterval(() => void beat(), intervalSeconds * 1000);
  timer.unref();
  void beat();
  return {
    beat,
    async stop() {
      if (stopped) return;
      stopped = true;
      clearInterval(timer);
      await pending;
      await write({ stoppedAt: new Date() }).catch((e: unknown) =>
        deps.log.warn({ err: (e as Error).message, daemon }, 'heartbeat stop not recorded'),
      );
    },
  };
}

/** Every heartbeat record, newest first (diagnostics, metrics, doctor). */
export function listHeartbeats(store: Store, filter: { daemon?: string } = {}): Promise<Array<Row<Heartbeat>>> {
  return store
    .repo<Heartbeat>(HeartbeatModel)
    .list({ filter: filter.daemon ? { daemon: filter.daemon } : {}, sort: [{ field: 'lastSeenAt', dir: 'desc' }], limit: 1000 });
}
