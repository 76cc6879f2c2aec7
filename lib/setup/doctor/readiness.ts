import { hostname } from 'node:os';
import { HeartbeatModel, type Heartbeat } from '../../settings/index.js';
import type { Config } from '../../config/index.js';
import type { Store } from '../../storage/index.js';
import { httpGetAt } from './probes.js';

// Readiness of the daemons beside the api daemon (Spec: GET /api/status, readiness). The api daemon
// forwards /push upgrades to the push daemon and the protocol paths to the protocols daemon
// (daemons/api/front-door.ts) and wakes the worker over its wake address: while one of them does
// not listen, a request forwarded to it fails (502 api-122). GET /api/status, svcmail doctor and
// svcmail start ask each daemon with the same probe, so "ready" means one thing everywhere.

export const PEER_DAEMONS = ['push', 'protocols', 'worker'] as const;
export type PeerDaemon = (typeof PEER_DAEMONS)[number];

export interface PeerProbe {
  daemon: PeerDaemon;
  /** Where it was asked; null when there is nowhere to ask (the worker with mail:jobs:wake_address empty). */
  address: string | null;
  state: 'ready' | 'down' | 'unchecked';
  /** What answered, or why nothing did, with the address: for logs and the CLI, not for public answers. */
  detail: string;
  /** The HTTP status and body when something answered. */
  status?: number;
  body?: string;
  /** The connect error when nothing answered (ECONNREFUSED, ENOENT, ETIMEDOUT…). */
  code?: string;
}

const SETTING = { push: 'listen:push', protocols: 'listen:protocols', worker: 'mail:jobs:wake_address' } as const;
/** What each daemon answers when it is ready: the push and protocols status (the latter 200 only while its datastore answers); the worker's wake listener answers any GET with 404. */
const PROBE: Record<PeerDaemon, { path: string; ready: (status: number, body: string) => boolean }> = {
  push: { path: '/push/status', ready: (s, b) => s === 200 && /"status"\s*:\s*"ok"/.test(b) },
  protocols: { path: '/protocols/status', ready: (s) => s === 200 },
  worker: { path: '/wake', ready: (s) => s > 0 && s < 500 },
};

export const isPeerDaemon = (name: string): name is PeerDaemon => (PEER_DAEMONS as readonly string[]).includes(name);

/** The address the daemon listens on: the configured one or the default, as the daemon itself reads it; null when it has none. */
export function peerAddress(config: Config, daemon: PeerDaemon): string | null {
  return config.get(SETTING[daemon]) || null;
}

/** Asks one daemon at its effective address whether it is ready. Never throws. */
export async function probePeer(config: Config, daemon: PeerDaemon, timeoutMs = 2000): Promise<PeerProbe> {
  const address = peerAddress(config, daemon);
  if (!address) return { daemon, address, state: 'unchecked', detail: `${SETTING[daemon]} is empty: there is no address to ask` };
  const { path, ready } = PROBE[daemon];
  try {
    const r = await httpGetAt(address, path, timeoutMs);
    return {
      daemon,
      address,
      state: ready(r.status, r.text) ? 'ready' : 'down',
      detail: `${address}: ${path} answered ${r.status}`,
      status: r.status,
      body: r.text,
    };
  } catch (e) {
    const code = (e as { code?: string }).code;
    return { daemon, address, state: 'down', detail: `${address}: ${code ?? (e as Error).message}`, code };
  }
}

/**
 * The daemons this host runs beside the api daemon, read from their heartbeats (lib/settings/heartbeat.ts):
 * a daemon counts while the newest heartbeat record of it from this host is not a clean stop. So a
 * daemon that runs, or died without stopping (a crash), is waited for; one never run on this host,
 * or last stopped on purpose (svcmail stop), is not. Records silent for a week are forgotten, and
 * with them a daemon this host no longer runs.
 */
export async function expectedPeers(store: Store, host = hostname()): Promise<Set<PeerDaemon>> {
  // A store without the heartbeat table (an app built on a narrower model set) expects nothing:
  // heartbeats only widen what is waited for, and the caller has just seen the datastore answer.
  let records: Heartbeat[] = [];
  try {
    records = await store
      .repo<Heartbeat>(HeartbeatModel)
      .list({ filter: { host }, sort: [{ field: 'lastSeenAt', dir: 'desc' }], limit: 500 });
  } catch {
    /* expects nothing */
  }
  const out = new Set<PeerDaemon>();
  for (const daemon of PEER_DAEMONS) {
    const newest = records.find((h) => h.daemon === daemon);
    if (newest && !newest.stoppedAt) out.add(daemon);
  }
  return out;
}

/**
 * Probes the expected daemons (expectedPeers) and any the caller requires (svcmail start requires
 * the ones it started: on a first start none has a heartbeat yet). Answers one row per peer daemon:
 * 'unchecked' for those neither expected nor required.
 */
export async function peerReadiness(
  config: Config,
  store: Store,
  required: Iterable<PeerDaemon> = [],
  timeoutMs = 2000,
): Promise<PeerProbe[]> {
  const wanted = await expectedPeers(store);
  for (const d of required) wanted.add(d);
  return Promise.all(
    PEER_DAEMONS.map((daemon) =>
      wanted.has(daemon)
        ? probePeer(config, daemon, timeoutMs)
        : Promise.resolve<PeerProbe>({
            daemon,
            address: peerAddress(config, daemon),
            state: 'unchecked',
            detail: 'not expected here (no heartbeat from this host, or last stopped cleanly) and not required',
          }),
    ),
  );
}

/** "the protocols daemon does not answer" / "the push and protocols daemons do not answer". */
export function notReadyPhrase(daemons: readonly string[]): string {
  const names =
    daemons.length > 1 ? `${daemons.slice(0, -1).join(', ')} and ${daemons[daemons.length - 1]} daemons` : `${daemons[0]} daemon`;
  return `the ${names} ${daemons.length > 1 ? 'do' : 'does'} not answer`;
}
