import { driveEnrollments, type AcmeClient, type ReplyMailer } from '../keys/index.js';
import type { Deps } from '../context/index.js';

export interface EnrollmentLoop {
  /** Run a round now (or right after the current one): an ACME challenge was just consumed. */
  wake(): void;
  /** Stops scheduling; resolves when the round in progress has finished. */
  stop(): Promise<void>;
}

/**
 * The signing-enrolment driver job (Spec: Signing-certificate enrolment, step 3): every
 * mail:jobs:signing_enrollment:interval_seconds and when woken, claims the open rfc8823 requests
 * with a lease (mail:jobs:signing_enrollment:lease_seconds; several workers are safe) and advances
 * each one step; a round that moved a request is followed by another, so a request goes from
 * "challenge answered" to "validating" without waiting a period. Rounds never overlap.
 */
export function startEnrollmentLoop(
  deps: Pick<Deps, 'config' | 'store' | 'events' | 'log'>,
  acme: AcmeClient,
  mailer: ReplyMailer,
  owner: string,
): EnrollmentLoop {
  const cfg = deps.config;
  const periodMs = cfg.get('mail:jobs:signing_enrollment:interval_seconds') * 1000;
  const leaseMs = cfg.get('mail:jobs:signing_enrollment:lease_seconds') * 1000;
  let running: Promise<void> | null = null;
  let again = false;
  let stopped = false;
  const run = (): void => {
    if (stopped) return;
    if (running) {
      again = true;
      return;
    }
    running = driveEnrollments(deps, acme, mailer, owner, leaseMs)
      .then((moved) => {
        if (!moved) return;
        deps.log.debug({ moved }, 'signing enrolment round');
        again = true;
      })
      .catch((e: unknown) => deps.log.error({ err: (e as Error).message }, 'signing enrolment round failed'))
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
      await running;
    },
  };
}
