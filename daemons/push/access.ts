import type { Principal } from '../../lib/auth/index.js';
import { ApiError } from '../../lib/errors/index.js';
import { checkRecord, type AnyRecord, type ResourceDecl, type ResourceRegistry } from '../../lib/resources/index.js';
import { type Deps } from '../../lib/context/index.js';

export type Verdict = 'granted' | 'denied' | 'gone';

/** uid → the resource it belongs to; uids never move between resources. */
const KIND_CACHE_MAX = 100_000;

/**
 * READ access to a channel (an entity uid), checked with trusted roles stripped (Spec: Events 2):
 * the record is loaded through the resource registry and judged by the same checkRecord the API
 * uses, so push never grants what a GET would refuse. An administrator's elevation never counts.
 */
export class ChannelAccess {
  readonly #kind = new Map<string, ResourceDecl>();
  readonly #decls: ResourceDecl[];

  constructor(
    private readonly deps: Deps,
    registry: ResourceRegistry,
  ) {
    // Mailbox-scoped resources first: that is what clients subscribe to.
    this.#decls = registry.all().sort((a, b) => Number(b.scope === 'mailbox') - Number(a.scope === 'mailbox'));
  }

  async #load(uid: string): Promise<{ decl: ResourceDecl; rec: AnyRecord } | null> {
    const known = this.#kind.get(uid);
    if (known) {
      const rec = await this.deps.store.repo<Record<string, unknown>>(known.model).get(uid);
      return rec ? { decl: known, rec } : null;
    }
    for (const decl of this.#decls) {
      const rec = await this.deps.store.repo<Record<string, unknown>>(decl.model).get(uid);
      if (rec) {
        if (this.#kind.size >= KIND_CACHE_MAX) this.#kind.delete(this.#kind.keys().next().value!);
        this.#kind.set(uid, decl);
        return { decl, rec };
      }
    }
    return null;
  }

  async check(principal: Principal, channel: string): Promise<Verdict> {
    if (channel === principal.uid) return 'granted';
    const found = await this.#load(channel);
    if (!found) return 'gone';
    // Trusted roles stripped for every channel, mailbox-scoped or not: elevation never widens push.
    const stripped: Principal = { ...principal, elevatedAt: null };
    const ctx = { ...this.deps, principal: stripped, ip: '', requestId: 'push' };
    try {
      await checkRecord(ctx, found.decl, found.rec, 'read');
      return 'granted';
    } catch (e) {
      if (e instanceof ApiError) return 'denied';
      throw e;
    }
  }
}
