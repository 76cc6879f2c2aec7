import { checkBlobStore, checkCa, checkDatastore, checkDkim, checkSecrets, checkTransport } from './local-checks.js';
import { checkDaemons, checkDns, checkRedis, checkSignin, checkWorker } from './remote-checks.js';
import { checkScanners } from './scanner-checks.js';
import { checkAutodiscover } from './protocol-checks.js';
import { checkMobileSync } from './eas-checks.js';
import type { Check, CheckResult, DoctorContext } from './types.js';
import { CHECK_IDS } from '../doctor-ids/index.js';

export { CHECK_IDS } from '../doctor-ids/index.js';

export type { CheckResult, CheckStatus, DoctorContext } from './types.js';

/** Every check, in the order an operator reads them. Config validity is checked by the caller (it must load first). */
const RUN: Record<(typeof CHECK_IDS)[number], Check> = {
  secrets: checkSecrets,
  datastore: checkDatastore,
  blobs: checkBlobStore,
  daemons: checkDaemons,
  worker: checkWorker,
  scanners: checkScanners,
  transport: checkTransport,
  signin: checkSignin,
  ca: checkCa,
  dkim: checkDkim,
  dns: checkDns,
  autodiscover: checkAutodiscover,
  activesync: checkMobileSync,
  redis: checkRedis,
};
export const CHECKS: Array<{ id: string; run: Check }> = CHECK_IDS.map((id) => ({ id, run: RUN[id] }));

/** Runs the checks concurrently (each is independent) and answers the results in the fixed order. */
export async function runDoctor(
  ctx: DoctorContext,
  onResult: (r: CheckResult) => void = () => undefined,
  skip: ReadonlySet<string> = new Set(),
): Promise<CheckResult[]> {
  const unknown = [...skip].filter((s) => !CHECKS.some((c) => c.id === s));
  if (unknown.length) throw new Error(`unknown check ${unknown.join(', ')}; one of ${CHECKS.map((c) => c.id).join(', ')}`);
  const settled = await Promise.all(
    CHECKS.map(async ({ id, run }): Promise<CheckResult[]> => {
      if (skip.has(id)) return [{ id, title: id, status: 'skip', detail: `skipped (--skip ${id})` }];
      let r: CheckResult | CheckResult[];
      try {
        r = await run(ctx);
      } catch (e) {
        r = { id, title: id, status: 'fail', detail: `the check itself failed: ${(e as Error).message}`, fix: 'report this as a bug' };
      }
      const list = [r].flat();
      list.forEach(onResult);
      return list;
    }),
  );
  return settled.flat();
}
export { httpGetAt } from './probes.js';
export { isPeerDaemon, notReadyPhrase, probePeer } from './readiness.js';
export { PEER_DAEMONS, peerReadiness, type PeerDaemon, type PeerProbe } from './readiness.js';
