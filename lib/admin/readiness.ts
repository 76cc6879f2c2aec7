import type { Deps } from '../context/index.js';
import { ApiError, invalid } from '../errors/index.js';
import { PRODUCT } from '../version.js';

// Readiness of one api daemon (Spec: GET /api/status), for load balancers and svcmail start: ready
// only when the datastore answers and so does every daemon this api forwards to or wakes that is
// expected (it runs on this host by its heartbeats, or the caller requires it). A daemon never run
// here is not waited for, so an api started alone (or built in-process by a test) is ready with
// its datastore. Addresses and connect errors go to the log, not the answer.

/** One daemon beside the api, as its probe found it. */
export interface PeerState {
  daemon: string;
  state: 'ready' | 'down' | 'unchecked';
  /** What answered, or why nothing did: for the log. */
  detail: string;
}

/**
 * How the daemons beside the api are probed: the probe svcmail doctor and svcmail start use
 * (lib/setup/doctor readiness.ts), handed in by the api daemon (lib/setup sits above lib/admin).
 */
export interface PeerReadiness {
  /** The daemons beside the api (push, protocols, worker). */
  names: readonly string[];
  /** A row per daemon of `names`: the expected ones and `required` probed, the others unchecked. */
  probe(required: string[]): Promise<PeerState[]>;
  /** "the protocols daemon does not answer". */
  notReadyPhrase(down: string[]): string;
}

export interface ReadyAnswer {
  status: 'ok';
  version: string;
  datastore: string;
  /** Each daemon beside the api: ready, or unchecked (not expected, or no address to ask). */
  daemons: Record<string, 'ready' | 'unchecked'>;
}

/** The readiness check of one api daemon: it remembers each daemon's last state, to log a change once. */
export class Readiness {
  readonly #lastState = new Map<string, PeerState['state']>();
  // Callers within a second share one round of probes rather than each sending its own to the
  // daemons (the route is public and comes before the rate limits).
  readonly #recent = new Map<string, { at: number; result: Promise<PeerState[]> }>();

  constructor(
    private readonly deps: Pick<Deps, 'store' | 'log'>,
    private readonly peers: PeerReadiness,
  ) {}

  /** Ready, or 503 api-113 naming the datastore or the daemons that do not answer; `required` are waited for even without a heartbeat here. */
  async check(required: readonly string[]): Promise<ReadyAnswer> {
    const { names } = this.peers;
    const unknown = required.filter((d) => d !== 'api' && !names.includes(d));
    if (unknown.length) throw invalid(`require: unknown daemon ${unknown.join(', ')}; any of api, ${names.join(', ')}`);
    let peers: PeerState[];
    try {
      await this.deps.store.ping();
      peers = await this.#probe(required.filter((d) => d !== 'api'));
    } catch (e) {
      throw e instanceof ApiError ? e : new ApiError('api-113', 'Not ready: the datastore does not answer');
    }
    this.#logChanges(peers);
    const down = peers.filter((p) => p.state === 'down').map((p) => p.daemon);
    if (down.length)
      throw new ApiError('api-113', `Not ready: ${this.peers.notReadyPhrase(down)}`, {
        details: down.map((d) => ({ path: d, message: 'does not answer' })),
      });
    return {
      status: 'ok',
      version: PRODUCT.version,
      datastore: this.deps.store.kind,
      // None is down here: each is ready or unchecked.
      daemons: Object.fromEntries(peers.map((p) => [p.daemon, p.state])) as ReadyAnswer['daemons'],
    };
  }

  #probe(required: string[]): Promise<PeerState[]> {
    const key = [...new Set(required)].sort().join(',');
    const hit = this.#recent.get(key);
    if (hit && Date.now() - hit.at < 1000) return hit.result;
    const result = this.peers.probe(required);
    this.#recent.set(key, { at: Date.now(), result });
    return result;
  }

  /** A daemon that stops answering is logged once as a warning, and once more when it answers again. */
  #logChanges(peers: readonly PeerState[]): void {
    const { log } = this.deps;
    for (const p of peers) {
      if (p.state !== 'unchecked' && this.#lastState.get(p.daemon) !== p.state) {
        if (p.state === 'down') log.warn({ daemon: p.daemon, detail: p.detail }, 'not ready: a daemon the api forwards to does not answer');
        else if (this.#lastState.has(p.daemon)) log.info({ daemon: p.daemon, detail: p.detail }, 'ready again: the daemon answers');
      }
      this.#lastState.set(p.daemon, p.state);
    }
  }
}
