import { drainQueue, workerId } from '../../lib/jobs/index.js';
import type { WorkerDeps } from '../../lib/ingest/index.js';

export interface ScanLoop {
  /** Run a round now (or right after the current one). */
  wake(): void;
  /** Stop scheduling; resolves when the round in progress has finished. */
  stop(): Promise<void>;
  readonly owner: string;
}

/** The scan job every mail:jobs:scan:interval_seconds and at once when woken; rounds never overlap. */
export function startScanLoop(deps: WorkerDeps): ScanLoop {
  const owner = workerId();
  const periodMs = deps.config.get('mail:jobs:scan:interval_seconds') * 1000;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = drainQueue(deps, owner)
      .then((r) => {
        if (r.claimed) deps.log.debug({ ...r }, 'scan round');
      })
      .catch((e: unknown) => deps.log.error({ err: (e as Error).message }, 'scan round failed'))
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
    owner,
    wake: run,
    async stop() {
      stopped = true;
      clearInterval(timer);
      await running;
    },
  };
}
