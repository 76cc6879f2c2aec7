import { createHash } from 'node:crypto';
import { isApiError } from '../errors/index.js';
import { OutboundHandoffModel, servedDomains } from '../ingest/index.js';
import { loadRaw, storeRaw } from '../mail/index.js';
import { dkimSign } from './dkim.js';
import type { Job, SendDeps } from './dispatch.js';
import { OutboundJobModel, type OutboundJob } from './models.js';
import { headerOf, outgoingRaw } from './raw.js';

interface Handoff {
  kind: string;
  envelopeFrom: string;
  envelopeTo: string[];
  rawRef: string;
  state: string;
}

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();
const bare = (v: string) => (/<([^>]+)>/.exec(v)?.[1] ?? v).trim().toLowerCase();

/** The Outbox record of a hand-off; record uids are at most 64 characters, so long hand-off ids are hashed. */
export function relayJobUid(handoffUid: string): string {
  const uid = `relay-${handoffUid}`;
  return uid.length <= 64 ? uid : `relay-${createHash('sha256').update(handoffUid).digest('hex').slice(0, 58)}`;
}

/**
 * Mail the service itself originates (NDRs, out-of-office, reject notices, list relays) is queued by
 * the inbound path as OutboundHandoff records. Each becomes an Outbox record once (uid derived from
 * the hand-off), DKIM-signed with the From domain's key, and goes through the same state machine.
 */
export async function adoptHandoffs(deps: SendDeps, limit: number): Promise<number> {
  const handoffs = deps.store.repo<Handoff>(OutboundHandoffModel);
  const jobs = deps.store.repo<OutboundJob>(OutboundJobModel);
  const queued = await handoffs.list({ filter: { state: 'queued' }, limit });
  if (!queued.length) return 0;
  const domains = await servedDomains(deps);
  let n = 0;
  for (const h of queued) {
    const uid = relayJobUid(h.uid);
    if (await jobs.get(uid)) continue;
    const raw = await loadRaw(deps, h.rawRef);
    // Signed for its From domain when we serve it: mail we originate, and list or forwarding copies
    // whose From was rewritten to ours (Spec: Trusting sender verification). A copy that keeps an
    // outside author's From is not ours to sign.
    const fromDomain = domainOf(bare(headerOf(raw, 'from')));
    const out = outgoingRaw(raw, fromDomain || 'localhost');
    const signed = domains.has(fromDomain) ? (await dkimSign(deps.config, out.raw, fromDomain)).raw : out.raw;
    const stored = await storeRaw(deps, signed);
    // Recipients in served domains take the inbound path (rules, counts, control messages such as
    // read receipts), not a round trip through the MTA; the rest go to the transport.
    const localRcpts = h.envelopeTo.filter((r) => domains.has(domainOf(r)));
    try {
      await jobs.create({
        uid,
        kind: 'relay',
        mailboxUid: null,
        messageUid: null,
        handoffUid: h.uid,
        rawRef: stored.blobId,
        size: stored.size,
        messageId: out.messageId,
        subject: headerOf(raw, 'subject'),
        envelopeFrom: h.envelopeFrom,
        localRcpts,
        localDone: !localRcpts.length,
        pending: h.envelopeTo.filter((r) => !localRcpts.includes(r)),
        accepted: [],
        refused: [],
        state: 'queued',
        background: true,
        scanned: true,
        attempts: 0,
        attemptId: null,
        attemptRcpts: [],
        attemptStartedAt: null,
        nextAttemptAt: new Date(),
        filedSent: false,
        review: false,
        reported: 0,
        lastError: null,
        finishedAt: null,
      });
      n++;
    } catch (e) {
      if (!(isApiError(e) && e.code === 'api-112')) throw e;
    }
  }
  return n;
}

/** A finished relay closes its hand-off record. */
export async function closeHandoff(deps: SendDeps, j: Job): Promise<void> {
  if (j.kind !== 'relay' || !j.handoffUid || !['sent', 'failed', 'review'].includes(j.state)) return;
  await deps.store
    .repo<Handoff>(OutboundHandoffModel)
    .updateMany({ uid: j.handoffUid, state: 'queued' }, { state: j.state === 'sent' ? 'sent' : 'failed' });
}
