import { createServer } from 'node:http';
import { productModels, productRegistry } from '../../lib/catalog.js';
import type { Config } from '../../lib/config/index.js';
import { createEventBus, type SharedEventBus } from '../../lib/events/index.js';
import { isWakeJob, mailPort, recordingOutbound, type WakeJob, type WorkerDeps } from '../../lib/ingest/index.js';
import { createLogger, type Logger } from '../../lib/log/index.js';
import { realScanners } from '../../lib/scan/index.js';
import { openStore } from '../../lib/storage/index.js';
import { listen } from '../shared/listen.js';
import type { RunningDaemon } from '../shared/run.js';
import { startScanLoop } from './scan-loop.js';
import { startHeartbeat } from '../../lib/settings/index.js';
import { blobSweepJob, retentionJob, startLeaseTakeover, startPeriodicJob } from '../../lib/jobs/index.js';
import { deviceCleanupJob } from '../../lib/plugins/index.js';
import { startSendLoop } from '../../lib/jobs/index.js';
import { acmeReplyMailer, sendControlHooks, sendDepsOf } from '../../lib/send/index.js';
import { startEnrollmentLoop, type EnrollmentLoop } from '../../lib/jobs/index.js';
import { acmeClientFromConfig } from '../../lib/keys/index.js';
import { startEscrowExportLoop } from '../../lib/jobs/index.js';
import { startLifecycleLoop } from '../../lib/lifecycle/index.js';

/**
 * Listens for wake-ups on the shared channel (Redis only; null without it). A name that is not one
 * of the jobs is ignored with a warning; a subscription that fails leaves the worker on its periods
 * and its wake-up address.
 */
async function listenForWakes(
  events: SharedEventBus,
  wakers: Record<WakeJob, () => void>,
  log: Logger,
): Promise<(() => Promise<void>) | null> {
  try {
    return await events.onWake((job) => {
      if (isWakeJob(job)) wakers[job]();
      else log.warn({ job: job.slice(0, 64) }, 'wake-up for an unknown job ignored');
    });
  } catch (e) {
    log.warn({ err: (e as Error).message }, 'wake-up channel not subscribed; running on the periods and the wake-up address');
    return null;
  }
}

/**
 * The worker daemon: the jobs — the ingest scan (every 10 s and when the api daemon wakes it), sends,
 * signing enrolment, retention, the blob sweep, escrow matter exports and mailbox lifecycle.
 */
export async function startWorker(config: Config): Promise<RunningDaemon> {
  const log = createLogger({ level: config.get('log:level'), name: 'svcmail-worker' });
  const models = productModels(productRegistry());
  const store = await openStore(config, models);
  const events = await createEventBus(config, log);
  const base = { config, store, events, log };
  const port = mailPort(base);
  let enrolLoop: EnrollmentLoop | null = null;
  const deps: WorkerDeps = {
    ...base,
    port,
    outbound: recordingOutbound(base, port),
    scanners: realScanners(config),
    control: sendControlHooks(undefined, { onAcmeChallenge: () => enrolLoop?.wake() }),
  };
  const loop = startScanLoop(deps);
  const sendLoop = startSendLoop(sendDepsOf(base, { port: deps.port, outbound: deps.outbound, scanners: deps.scanners }), loop.owner);
  // Signing-certificate enrolment (rfc8823): the driver job, when an ACME CA is configured; its
  // DKIM-signed replies take the outbound hand-off and the send job is woken to relay them.
  const acme = acmeClientFromConfig(config);
  if (acme)
    enrolLoop = startEnrollmentLoop(
      base,
      acme,
      acmeReplyMailer(deps, () => sendLoop.wake()),
      loop.owner,
    );
  const retention = startPeriodicJob(base, retentionJob(base), loop.owner);
  const blobSweep = startPeriodicJob(base, blobSweepJob(base), loop.owner); // released raw messages (lib/storage/blob/release.ts)
  const deviceCleanup = startPeriodicJob(base, deviceCleanupJob(base), loop.owner); // mobile devices idle beyond device_ttl_days
  const exportLoop = startEscrowExportLoop(base, loop.owner); // escrow matter exports (Spec: /api/escrow/ matter-export-requests)
  const lifecycle = startLifecycleLoop({ ...base, models }, loop.owner); // mailbox exports, imports, erasures
  // A worker that died holding leases (kill -9): its records are taken at once, not when the leases end.
  const takeover = startLeaseTakeover(base, loop.owner, () => {
    loop.wake();
    sendLoop.wake();
  });
  const wakeAddress = config.get('mail:jobs:wake_address');
  const wakers: Record<WakeJob, () => void> = { scan: loop.wake, send: sendLoop.wake, export: exportLoop.wake, lifecycle: lifecycle.wake };
  // With redis:url, wake-ups from every copy of every daemon arrive on the shared channel (lib/ingest/wake.ts).
  const stopWakes = await listenForWakes(events, wakers, log);
  const server = createServer((req, res) => {
    // POST /wake/<job> wakes that job (lib/ingest/wake.ts); POST /wake, every job.
    const job = req.method === 'POST' ? /^\/wake(?:\/([a-z]+))?$/.exec(req.url ?? '') : null;
    const woken = job && (!job[1] ? () => Object.values(wakers).forEach((w) => w()) : isWakeJob(job[1]) ? wakers[job[1]] : null);
    if (woken) {
      woken();
      res.writeHead(204).end();
    } else res.writeHead(404).end();
  });
  let address = '(no wake-up address)';
  if (wakeAddress) {
    try {
      address = await listen(server, wakeAddress, 'mail:jobs:wake_address');
    } catch (e) {
      // Another worker copy on this host holds the address: this one runs on the period only.
      log.warn({ err: (e as Error).message, wakeAddress }, 'wake-up address in use; running on the period only');
    }
  }
  log.info({ address, owner: loop.owner, datastore: store.kind }, 'worker daemon running');
  const heartbeat = startHeartbeat(base, 'worker');
  return {
    address,
    async close() {
      await stopWakes?.();
      server.close();
      await loop.stop();
      await sendLoop.stop();
      await retention.stop();
      await blobSweep.stop();
      await deviceCleanup.stop();
      await takeover.stop();
      await exportLoop.stop();
      await lifecycle.stop();
      await heartbeat.stop();
      await enrolLoop?.stop();
      await events.close();
      await store.close();
      log.info('worker daemon stopped');
    },
  };
}
