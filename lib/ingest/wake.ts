import { request } from 'node:http';
import type { Config } from '../config/index.js';
import type { EventBus } from '../events/index.js';

/**
 * The worker's jobs a wake-up names (POST /wake/<job>, or the job of a wake-up on the Redis channel;
 * a bare POST /wake wakes every job). Each job is woken only by the work it does: a hand-off that
 * woke the send, export and lifecycle loops too would have each of them claim nothing in a
 * transaction of its own, once per wake-up.
 */
export type WakeJob = 'scan' | 'send' | 'export' | 'lifecycle';

const WAKE_JOBS: readonly WakeJob[] = ['scan', 'send', 'export', 'lifecycle'];

/** Whether a name from outside (an HTTP path, a Redis message) is one of the jobs. */
export const isWakeJob = (name: string): name is WakeJob => (WAKE_JOBS as readonly string[]).includes(name);

/** What a wake-up needs: the settings (wake address) and the event bus (its Redis channel, if any). */
export interface WakeDeps {
  config: Config;
  events: EventBus;
}

/** Per configuration (one per daemon) and job: is a wake-up on its way, and was another asked for meanwhile? */
const pending = new WeakMap<Config, Map<WakeJob, { again: boolean }>>();

/** POSTs /wake/<job> to this host's worker (mail:jobs:wake_address); null when no address is set. */
function postWake(config: Config, job: WakeJob): Promise<void> | null {
  const address = config.get('mail:jobs:wake_address');
  if (!address) return null;
  const target = address.startsWith('/')
    ? { socketPath: address }
    : {
        host: address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''),
        port: Number(address.slice(address.lastIndexOf(':') + 1)),
      };
  return new Promise((done) => {
    const req = request({ ...target, method: 'POST', path: `/wake/${job}`, timeout: 500, agent: false }, (res) => {
      res.on('end', done);
      res.on('error', done);
      res.resume();
    });
    req.on('error', done);
    req.on('timeout', () => req.destroy());
    req.on('close', done);
    req.end();
  });
}

/**
 * One wake-up. With redis:url it is published on the shared channel, which every worker copy on
 * every host listens to, this host's included: it goes there instead of, not as well as, to the
 * local address, which would wake the local worker twice (a second round claiming nothing). The
 * local address is the fallback when the channel reached no worker: Redis not connected, the publish
 * failed or was not answered within 500 ms, or no worker listens. Without redis:url: the address.
 */
function sendWake(deps: WakeDeps, job: WakeJob): Promise<void> | null {
  const shared = deps.events.wakeAll?.(job);
  if (!shared) return postWake(deps.config, job);
  return shared.then((received) => (received > 0 ? undefined : (postWake(deps.config, job) ?? undefined)));
}

/**
 * Tells the worker daemons that work arrived (best effort: each job also runs on its period, e.g.
 * mail:jobs:scan:interval_seconds). The workers listen on the Redis channel `<redis:prefix>wake` when
 * redis:url is set, and on mail:jobs:wake_address.
 *
 * Wake-ups are coalesced: while one is on its way, further calls only note that another is owed,
 * and that one is sent when the first has been answered (or has failed). The worker starts a round
 * (or schedules one after the current round) when a wake-up arrives, so work queued while a wake-up
 * was travelling is still followed by one sent after it was queued. Under a burst of hand-offs this
 * is a handful of requests instead of one connection per message (bench/ingest.ts).
 */
export function wakeWorkers(deps: WakeDeps, job: WakeJob): void {
  let jobs = pending.get(deps.config);
  if (!jobs) pending.set(deps.config, (jobs = new Map()));
  const state = jobs.get(job);
  if (state) {
    state.again = true;
    return;
  }
  const sent = sendWake(deps, job);
  if (!sent) return;
  const mine = { again: false };
  jobs.set(job, mine);
  void sent.then(() => {
    jobs.delete(job);
    if (mine.again) wakeWorkers(deps, job);
  });
}
