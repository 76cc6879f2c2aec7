import type { Config } from '../config/index.js';
import { IssuedCertificateModel, type IssuedCertificate } from '../pki/index.js';
import type { Ctx } from '../context/index.js';
import { findSvcRecord } from './dns.js';
import { pinnedKey } from './discovered.js';
import type { RecipientClass } from './policy.js';
import { findVault } from './vault-service.js';

// Spec: Encryption policy — each recipient of a send is sameOrg (a domain this server serves),
// federated ("other servers of this service with the DNS record": _svc.<domain> TXT, the record key
// lookup reads) or external; "keys exist" is a local key record for sameOrg recipients and the
// pinned key (Discovered keys) for the others.

interface Cached {
  federated: boolean;
  until: number;
}
const cache = new Map<string, Cached>();
const MAX_CACHED = 10_000;
/** A failed or slow DNS answer is remembered briefly only, so a recovered resolver is asked again soon. */
const FAILURE_TTL_MS = 30_000;

/** Drops the federation cache (tests that change DNS records between sends). */
export function clearFederationCache(): void {
  cache.clear();
}

function remember(key: string, federated: boolean, ttlMs: number): boolean {
  if (cache.size >= MAX_CACHED) cache.delete(cache.keys().next().value!);
  cache.set(key, { federated, until: Date.now() + ttlMs });
  return federated;
}

/**
 * True when the domain publishes a well-formed _svc record. Answers are cached for
 * mail:keys:federation:cache_seconds and the question is cut off after
 * mail:keys:federation:send_timeout_ms, so a slow resolver does not hold up a send: an unanswered
 * domain counts as external (a pinned key still refuses a downgrade).
 */
export async function isFederatedDomain(ctx: Pick<Ctx, 'config' | 'log'>, domain: string): Promise<boolean> {
  const config: Config = ctx.config;
  const d = domain.toLowerCase();
  const key = `${config.get('mail:dns:resolver')}|${config.get('mail:dns:nameservers').join(',')}|${d}`;
  const hit = cache.get(key);
  if (hit && hit.until > Date.now()) return hit.federated;
  let timer: NodeJS.Timeout | undefined;
  const stop = new AbortController();
  const timeout = new Promise<'timeout'>((r) => {
    timer = setTimeout(() => {
      stop.abort();
      r('timeout');
    }, config.get('mail:keys:federation:send_timeout_ms'));
  });
  try {
    const found = await Promise.race([findSvcRecord(config, d, stop.signal), timeout]);
    if (found === 'timeout') {
      ctx.log.info({ domain: d }, 'federation discovery timed out during send; the recipient counts as external');
      return remember(key, false, FAILURE_TTL_MS);
    }
    return remember(key, Boolean(found), config.get('mail:keys:federation:cache_seconds') * 1000);
  } catch (e) {
    ctx.log.info({ err: (e as Error).message, domain: d }, 'federation discovery failed during send; the recipient counts as external');
    return remember(key, false, FAILURE_TTL_MS);
  } finally {
    clearTimeout(timer);
  }
}

/** A local recipient has keys when its vault holds an encryption certificate we issued, unrevoked and unexpired. */
export async function hasLocalKey(ctx: Pick<Ctx, 'store'>, mailboxUid: string): Promise<boolean> {
  const v = await findVault(ctx, mailboxUid);
  if (!v?.enrolled || !v.encryptionCertificate || !v.encryptionFingerprint) return false;
  const rec = await ctx.store.repo<IssuedCertificate>(IssuedCertificateModel).findOne({ fingerprint: v.encryptionFingerprint });
  return Boolean(rec && rec.kind === 'encryption' && rec.mailboxUid === mailboxUid && !rec.revokedAt && rec.notAfter > new Date());
}

export interface SendRecipient {
  address: string;
  /** The served domain's mailbox the address resolves to; null for a list, an unknown or a foreign address. */
  localMailboxUid: string | null;
  sameOrg: boolean;
}

/** Classifies a send's recipients for checkSendPolicy (DNS questions once per domain, in parallel). */
export async function classifyRecipients(
  ctx: Pick<Ctx, 'config' | 'store' | 'log'>,
  senderMailboxUid: string,
  rcpts: readonly SendRecipient[],
): Promise<Array<{ address: string; class: RecipientClass; hasKey: boolean }>> {
  const domains = [...new Set(rcpts.filter((r) => !r.sameOrg).map((r) => r.address.slice(r.address.lastIndexOf('@') + 1).toLowerCase()))];
  const federated = new Map(await Promise.all(domains.map(async (d) => [d, await isFederatedDomain(ctx, d)] as const)));
  return Promise.all(
    rcpts.map(async (r) => {
      const domain = r.address.slice(r.address.lastIndexOf('@') + 1).toLowerCase();
      const cls: RecipientClass = r.sameOrg ? 'sameOrg' : federated.get(domain) ? 'federated' : 'external';
      const local = r.sameOrg && r.localMailboxUid ? await hasLocalKey(ctx, r.localMailboxUid) : false;
      return { address: r.address, class: cls, hasKey: local || Boolean(await pinnedKey(ctx, senderMailboxUid, r.address)) };
    }),
  );
}
