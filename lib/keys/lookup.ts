import { AddressModel } from '../mail/index.js';
import { DomainModel } from '../settings/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { type Ctx } from '../context/index.js';
import { discoveryHash, splitAddress } from '../mail/index.js';
import { checkedRequest } from '../http/index.js';
import { findSvcRecord, svcHostResolver } from './dns.js';
import { observeKey, pinnedKey, type PinView } from './discovered.js';
import { checkFoundCertificate } from './validate.js';
import { certificateOf, loadMailbox } from './vault-service.js';

// Spec: GET /api/mail/mailboxes/:id/keys/lookup — local records, else federated through the
// other server's public endpoint, found from its _svc.<domain> TXT record.

export interface LookupAnswer {
  address: string;
  source: 'local' | 'federated';
  certificate: string;
  fingerprint: string;
  /** Federated keys: the pin state for this mailbox (Spec: Discovered keys). */
  pin: PinView | null;
  /** Federated keys: whether the other server still answered the key ('absent' keeps the pinned key). */
  remote?: 'found' | 'absent' | 'unreachable';
}

async function isLocalDomain(ctx: Ctx, domain: string): Promise<boolean> {
  if (await ctx.store.repo(DomainModel).findOne({ name: domain })) return true;
  const all = await ctx.store.repo<{ aliases: string[] }>(DomainModel).list({ limit: 10_000 });
  return all.some((d) => d.aliases.includes(domain));
}

/**
 * Asks the other server; null when it has no key for the address. The host comes from a record the
 * address's domain publishes, so the connection goes through the outbound check (no internal
 * addresses, the checked address connected to, no redirects, the answer capped).
 */
export async function fetchRemoteKey(
  ctx: Pick<Ctx, 'config'>,
  address: string,
): Promise<{ certificate: string; fingerprint: string } | null> {
  const { local, domain } = splitAddress(address);
  const svc = await findSvcRecord(ctx.config, domain);
  if (!svc) return null;
  const base = ctx.config.get('mail:keys:federation:url_template').replace('{host}', svc.host).replace(/\/$/, '');
  const hash = discoveryHash(local);
  const res = await checkedRequest(`${base}/.well-known/svc/keys/${hash}?domain=${encodeURIComponent(domain)}`, {
    config: ctx.config,
    resolve: svcHostResolver(ctx.config),
    headers: { accept: 'application/json' },
    timeoutMs: ctx.config.get('mail:keys:federation:timeout_ms'),
    maxBytes: ctx.config.get('mail:keys:federation:max_response_bytes'),
  });
  if (res.status === 404) return null;
  if (res.status < 200 || res.status >= 300) throw new Error(`${svc.host} answered HTTP ${res.status}`);
  const body = JSON.parse(res.body.toString('utf8')) as { hash?: unknown; domain?: unknown; certificate?: unknown };
  if (body.hash !== hash || body.domain !== domain || typeof body.certificate !== 'string')
    throw new Error(`${svc.host} answered for another address`);
  const checked = await checkFoundCertificate(body.certificate, address);
  if (!checked.ok) throw new Error(`${svc.host} answered an unusable certificate: ${checked.reason}`);
  return { certificate: checked.pem, fingerprint: checked.fingerprint };
}

/**
 * The key of `address` (a plain address, lowercased: the route's query checks it with emailAddress).
 * `peek`: a federated key not pinned yet is answered without pinning it (compose asks before the
 * user sends; the key is pinned when it is first used, through GET keys/lookup at the send). A
 * contact already pinned is observed as always: a different key becomes a conflict to decide.
 */
export async function lookupKey(ctx: Ctx, mailboxUid: string, address: string, opts: { peek?: boolean } = {}): Promise<LookupAnswer> {
  await loadMailbox(ctx, mailboxUid, 'read');
  const { domain } = splitAddress(address);
  if (await isLocalDomain(ctx, domain)) {
    const rec = await ctx.store.repo<{ mailboxUid: string }>(AddressModel).findOne({ address });
    const cert = rec ? await certificateOf(ctx, rec.mailboxUid) : null;
    if (!cert) throw notFound('No encryption key for this address');
    return { address, source: 'local', ...cert, pin: null };
  }
  let found: { certificate: string; fingerprint: string } | null = null;
  let remote: LookupAnswer['remote'] = 'found';
  try {
    found = await fetchRemoteKey(ctx, address);
    if (!found) remote = 'absent';
  } catch (e) {
    ctx.log.info({ err: (e as Error).message, domain }, 'federated key lookup failed');
    remote = 'unreachable';
  }
  const pinned = await pinnedKey(ctx, mailboxUid, address);
  if (found && opts.peek && !pinned) return { address, source: 'federated', remote, ...found, pin: null };
  if (found) return { address, source: 'federated', remote, ...(await observeKey(ctx, mailboxUid, address, 'federated', found)) };
  // Downgrade protection: a pinned key stays in use when the other side stops answering one.
  if (pinned)
    return {
      address,
      source: 'federated',
      remote,
      certificate: pinned.certificate,
      fingerprint: pinned.fingerprint,
      pin: {
        uid: pinned.uid,
        state: pinned.state,
        fingerprint: pinned.fingerprint,
        pendingFingerprint: pinned.pendingFingerprint ?? null,
        firstUse: false,
      },
    };
  if (remote === 'unreachable') throw new ApiError('api-113', `the server of ${domain} could not be asked for keys`);
  throw notFound('No encryption key for this address');
}
