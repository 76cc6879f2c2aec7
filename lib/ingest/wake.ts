import { request } from 'node:http';
import type { Config } from '../config/index.js';

/**
 * The worker's jobs a wake-up names (POST /wake/<job>; a bare POST /wake wakes every job). Each job
 * is woken only by the work it does: a hand-off that woke the send, export and lifecycle loops too
 * would have each of them claim nothing in a transaction of its own, once per wake-up.
 */
export type WakeJob = 'scan' | 'send' | 'export' | 'lifecycle';

/** Per configuration (one per daemon) and job: is a wake-up on its way, and was another asked for meanwhile? */
const pending = new WeakMap<Config, Map<WakeJob, { again: boolean }>>();

/**
 * Tells the worker daemon that work arrived (best effort: the job also runs every
 * mail:jobs:scan:interval_seconds). The worker listens on mail:jobs:wake_address.
 *
 * Wake-ups are coalesced: while one is on its way, further calls only note that another is owed,
 * and that one is sent when the first has been answered (or has failed). The worker starts a round
 * (or schedules one after the current round) when a wake-up arrives, so work queued while a wake-up
 * was travelling is still followed by one sent after it was queued. Under a burst of hand-offs this
 * is a handful of requests instead of one connection per message (bench/ingest.ts).
 */
export function wakeWorkers(config: Config, job: WakeJob): void {
  const address = config.get('mail:jobs:wake_address');
  if (!address) return;
  let jobs = pending.get(config);
  if (!jobs) pending.set(config, (jobs = new Map()));
  const state = jobs.get(job);
  if (state) {
    state.again = true;
    return;
  }
  const mine = { again: false };
  jobs.set(job, mine);
  let settled = false;
  const done = () => {
    if (settled) return;
    settled = true;
    jobs.delete(job);
    if (mine.again) wakeWorkers(config, job);
  };
  const target = address.startsWith('/')
    ? { socketPath: address }
    : {
        host: address.slice(0, address.lastIndexOf(':')).replace(/^\[|\]$/g, ''),
        port: Number(address.slice(address.lastIndexOf(':') + 1)),
      };
  const req = request({ ...target, method: 'POST', path: `/wake/${job}`, timeout: 500, agent: false }, (res) => {
    res.on('end', done);
    res.on('error', done);
    res.resume();
  });
  req.on('error', done);
  req.on('timeout', () => req.destroy());
  req.on('close', done);
  req.end();
}
