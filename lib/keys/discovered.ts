import { ApiError, notFound } from '../errors/index.js';
import type { Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { DiscoveredKeyModel, type DiscoveredKey } from './models.js';
import { loadMailbox } from './vault-service.js';

// Spec: Discovered keys — pinned to the contact on first use; a conflicting new key waits for the
// user to accept or reject it; downgrade to no encryption is refused while a key is pinned.

const repo = (ctx: Pick<Ctx, 'store'>) => ctx.store.repo<DiscoveredKey>(DiscoveredKeyModel);

export interface PinView {
  uid: string;
  state: 'pinned' | 'conflict';
  fingerprint: string;
  pendingFingerprint: string | null;
  /** True when this lookup pinned the key. */
  firstUse: boolean;
}

const pinView = (r: DiscoveredKey & { uid: string }, firstUse = false): PinView => ({
  uid: r.uid,
  state: r.state,
  fingerprint: r.fingerprint,
  pendingFingerprint: r.pendingFingerprint ?? null,
  firstUse,
});

/** Records what a lookup found; answers the certificate to use (always the pinned one). */
export async function observeKey(
  ctx: Ctx,
  mailboxUid: string,
  address: string,
  source: 'local' | 'federated',
  found: { certificate: string; fingerprint: string },
): Promise<{ certificate: string; fingerprint: string; pin: PinView }> {
  const r = repo(ctx);
  const cur = await r.findOne({ mailboxUid, address });
  if (!cur) {
    const created = await r.create({
      mailboxUid,
      address,
      source,
      certificate: found.certificate,
      fingerprint: found.fingerprint,
      state: 'pinned',
      pendingCertificate: null,
      pendingFingerprint: null,
      rejected: [],
    });
    return { ...found, pin: pinView(created, true) };
  }
  if (cur.fingerprint !== found.fingerprint && !cur.rejected.includes(found.fingerprint) && cur.pendingFingerprint !== found.fingerprint) {
    const upd = await r.update(cur.uid, {
      state: 'conflict',
      pendingCertificate: found.certificate,
      pendingFingerprint: found.fingerprint,
    });
    return { certificate: upd.certificate, fingerprint: upd.fingerprint, pin: pinView(upd) };
  }
  return { certificate: cur.certificate, fingerprint: cur.fingerprint, pin: pinView(cur) };
}

/** The pinned key of a contact, if any (a lookup that finds nothing still answers it). */
export async function pinnedKey(
  ctx: Pick<Ctx, 'store'>,
  mailboxUid: string,
  address: string,
): Promise<(DiscoveredKey & { uid: string }) | null> {
  return repo(ctx).findOne({ mailboxUid, address: address.toLowerCase() });
}

export async function listDiscovered(ctx: Ctx, mailboxUid: string): Promise<Array<Row<DiscoveredKey>>> {
  await loadMailbox(ctx, mailboxUid, 'read');
  return repo(ctx).list({ filter: { mailboxUid }, limit: 1000, sort: [{ field: 'address', dir: 'asc' }] });
}

export async function resolveConflict(
  ctx: Ctx,
  mailboxUid: string,
  uid: string,
  decision: 'accept' | 'reject',
): Promise<Row<DiscoveredKey>> {
  await loadMailbox(ctx, mailboxUid, 'write');
  const cur = await repo(ctx).get(uid);
  if (!cur || cur.mailboxUid !== mailboxUid) throw notFound();
  if (cur.state !== 'conflict' || !cur.pendingCertificate || !cur.pendingFingerprint)
    throw new ApiError('api-120', 'this key has no conflicting key waiting');
  const upd =
    decision === 'accept'
      ? await repo(ctx).update(uid, {
          state: 'pinned',
          certificate: cur.pendingCertificate,
          fingerprint: cur.pendingFingerprint,
          pendingCertificate: null,
          pendingFingerprint: null,
          rejected: cur.rejected.filter((f) => f !== cur.pendingFingerprint),
        })
      : await repo(ctx).update(uid, {
          state: 'pinned',
          pendingCertificate: null,
          pendingFingerprint: null,
          rejected: [...new Set([...cur.rejected, cur.pendingFingerprint])].slice(-50),
        });
  ctx.events.publish([mailboxUid], {
    type: 'discovered-key',
    action: 'update',
    data: { uid, address: upd.address, state: upd.state, fingerprint: upd.fingerprint },
  });
  return upd;
}

/**
 * For the send path: plaintext to a contact whose key is pinned is a downgrade and is refused
 * (api-121, like the encryption policy). Returns quietly when the message is encrypted or no
 * recipient has a pinned key.
 */
export async function refuseDowngrade(
  ctx: Pick<Ctx, 'store'>,
  mailboxUid: string,
  recipients: readonly string[],
  encrypted: boolean,
): Promise<void> {
  if (encrypted || !recipients.length) return;
  const pinned = await repo(ctx).list({ filter: { mailboxUid, address: { $in: recipients.map((a) => a.toLowerCase()) } }, limit: 1000 });
  if (pinned.length)
    throw new ApiError(
      'api-121',
      `encryption keys are pinned for ${pinned.map((p) => p.address).join(', ')}; sending them plaintext is refused`,
    );
}
