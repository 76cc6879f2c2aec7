import { createHash } from 'node:crypto';
import { ApiError } from '../errors/index.js';
import { crashPoint } from '../crash-points/index.js';
import type { Deps } from '../context/index.js';
import type { StagedBlob } from '../storage/index.js';
import { rewriteFrom } from './from-rewrite.js';
import { headerValue, prependHeaders, readHeaders } from './headers.js';
import type { MailPort } from './mail-port.js';
import { IngestEntryModel, type IngestEntry } from './models.js';
import { nonDeliveryReport, systemMessage, type OutboundHook } from './outbound.js';
import { expandRecipient, knownAddresses, resolveRecipient, servedDomains, type Expansion } from './resolve.js';
import { evaluateTransportRules, type TransportDecision } from './transport-rules.js';
import { verifySender } from './verify.js';
import { wakeWorkers } from './wake.js';

export interface Handoff {
  /**
   * The raw message: bytes, or (the HTTP hand-off) a body already streamed to a staged blob, which
   * is committed as the stored raw when it is queued and never read whole unless a copy is relayed
   * or a transport rule adds headers.
   */
  raw: Buffer | StagedBlob;
  envelopeFrom: string;
  recipients: string[];
  /** Identifier of the SMTP transaction from the MTA (Postfix queue id); else derived from the bytes. */
  transactionId?: string;
}

export interface RecipientResult {
  recipient: string;
  status: 'queued' | 'duplicate' | 'relayed' | 'unknown' | 'rejected';
  mailboxes?: number;
  reason?: string;
}

export interface HandoffResult {
  transactionId: string;
  results: RecipientResult[];
  queued: number;
}

export interface IngestDeps extends Deps {
  port: MailPort;
  outbound: OutboundHook;
}

const sha = (s: string | Buffer) => createHash('sha256').update(s).digest('hex');

/** The transaction id the queue derives entry ids from, so a retried hand-off is recognised. */
export function transactionIdOf(h: Handoff): string {
  if (h.transactionId) return `mta:${h.transactionId}`;
  // The message's own sha256 (known once it streamed in) and the envelope.
  const rawSha = Buffer.isBuffer(h.raw) ? sha(h.raw) : h.raw.sha256;
  return `sha256:${sha(`${rawSha}\0${h.envelopeFrom}\0${[...h.recipients].sort().join(',')}`)}`;
}

export const entryUid = (transactionId: string, mailboxUid: string, kind = 'rcpt'): string =>
  sha(`${transactionId}\0${kind}\0${mailboxUid}`);

/**
 * Queues entries that are not queued yet, in one write (one statement on PostgreSQL, one
 * transaction on SQLite; one commit however many mailboxes). An entry queued before (a retried
 * hand-off, or a concurrent one) is left out by its derived uid and answered 'duplicate'.
 */
async function createOnce(deps: Deps, entries: Array<IngestEntry & { uid: string }>): Promise<Array<'queued' | 'duplicate'>> {
  const written = new Set(
    (await deps.store.repo<IngestEntry>(IngestEntryModel).createMany(entries, { skipExisting: true })).map((e) => e.uid),
  );
  crashPoint('ingest.after-queue-row'); // the rows committed, the MTA not answered yet: its retry finds them queued
  return entries.map((e) => (written.has(e.uid) ? 'queued' : 'duplicate'));
}

function newEntry(
  uid: string,
  fields: Pick<
    IngestEntry,
    'transactionId' | 'mailboxUid' | 'recipient' | 'envelopeFrom' | 'rawRef' | 'size' | 'transportQuarantine' | 'tag' | 'viaList'
  >,
): IngestEntry & { uid: string } {
  return {
    uid,
    ...fields,
    state: 'queued',
    attempts: 0,
    nextAttemptAt: new Date(),
    lastError: null,
    verdict: null,
    folderRole: null,
    messageUid: null,
    finishedAt: null,
  };
}

/**
 * Spec: Inbound message, row "received": resolve every recipient, store the raw message once, queue
 * one entry per mailbox, and answer with a result per recipient. Every entry is committed before
 * this returns (so before the 202), and the worker's scan job is woken when any was queued.
 */
export async function acceptHandoff(deps: IngestDeps, h: Handoff): Promise<HandoffResult> {
  const transactionId = transactionIdOf(h);
  const staged = Buffer.isBuffer(h.raw) ? null : h.raw;
  // Decisions before delivery read the header block only: a staged body keeps its first bytes in memory.
  const headers = readHeaders(staged ? staged.head : (h.raw as Buffer));
  const sender = verifySender(deps.config, headers);
  const envelopeFrom = h.envelopeFrom.trim().toLowerCase();
  let rules: TransportDecision = { reject: null, addHeaders: [], addRecipients: [], quarantine: null };
  try {
    rules = await evaluateTransportRules(deps, { headers, envelopeFrom, recipients: h.recipients });
  } catch (e) {
    // Spec: when evaluating the rules fails, delivery continues without them.
    deps.log.warn({ err: (e as Error).message, transactionId }, 'transport rules failed; delivering without them');
  }
  if (rules.reject) {
    // A notice goes only to a sender whose DKIM verified (no backscatter to forged senders).
    if (sender.verified && sender.fromAddress) {
      const domain = [...(await servedDomains(deps)).keys()][0] ?? 'localhost';
      await deps.outbound.send({
        kind: 'reject-notice',
        envelopeFrom: '',
        envelopeTo: [sender.fromAddress],
        raw: systemMessage({
          from: `postmaster@${domain}`,
          to: sender.fromAddress,
          subject: `Rejected: ${headerValue(headers, 'subject')}`,
          body: rules.reject.notice ?? 'Your message was rejected by a policy of the receiving organisation.',
          headers: { 'Auto-Submitted': 'auto-replied' },
        }),
      });
    }
    return {
      transactionId,
      queued: 0,
      results: h.recipients.map((r) => ({ recipient: r, status: 'rejected', reason: `transport rule ${rules.reject!.rule}` })),
    };
  }

  const domains = await servedDomains(deps);
  const expansion: Expansion = { mailboxes: new Map(), external: [], refusedLists: [], cut: [] };
  const results: RecipientResult[] = [];
  const unknown: string[] = [];
  const allRecipients = [...h.recipients, ...rules.addRecipients.filter((r) => !h.recipients.includes(r))];
  const byRecipient = new Map<string, Set<string>>();
  const known = await knownAddresses(deps, allRecipients, domains);
  for (const rcpt of allRecipients) {
    const r = await resolveRecipient(deps, rcpt, domains, known);
    if (r.kind === 'unknown') {
      if (r.reason === 'domain' && rules.addRecipients.includes(rcpt)) {
        expansion.external.push({ address: rcpt, viaList: 'transport-rule' });
        results.push({ recipient: rcpt, status: 'relayed' });
        continue;
      }
      results.push({
        recipient: rcpt,
        status: r.reason === 'domain' ? 'rejected' : 'unknown',
        reason: r.reason === 'domain' ? 'domain not served' : 'no such recipient',
      });
      if (r.reason === 'recipient') unknown.push(rcpt);
      continue;
    }
    const before = new Set(expansion.mailboxes.keys());
    const ext = expansion.external.length;
    const refused = expansion.refusedLists.length;
    await expandRecipient(deps, rcpt, r, { sender: sender.fromAddress, senderVerified: sender.verified, domains }, expansion);
    byRecipient.set(rcpt, new Set([...expansion.mailboxes.keys()].filter((m) => !before.has(m))));
    if (expansion.refusedLists.length > refused && !byRecipient.get(rcpt)!.size)
      results.push({ recipient: rcpt, status: 'rejected', reason: 'members-only list' });
    else
      results.push({
        recipient: rcpt,
        status: expansion.external.length > ext && !byRecipient.get(rcpt)!.size ? 'relayed' : 'queued',
        mailboxes: byRecipient.get(rcpt)!.size,
      });
  }
  if (!results.some((r) => r.status !== 'rejected' || r.reason !== 'domain not served')) {
    throw new ApiError('api-119', 'Forbidden: no recipient is in a domain served here', {
      details: [{ path: 'X-Envelope-To', message: 'domain-not-served' }],
    });
  }

  // The bytes as delivered (with any header a transport rule adds): read whole only when needed.
  let whole: Buffer | null = null;
  const rawBytes = async () => (whole ??= prependHeaders(staged ? await staged.read() : (h.raw as Buffer), rules.addHeaders));
  let queued = 0;
  if (expansion.mailboxes.size || expansion.external.length) {
    const stored =
      staged && !rules.addHeaders.length
        ? await staged.commit().then((b) => ({ ref: b.blobId, size: b.size }))
        : await deps.port.storeRaw(await rawBytes());
    crashPoint('ingest.after-blob');
    const boxes = [...expansion.mailboxes];
    const statuses = await createOnce(
      deps,
      boxes.map(([mailboxUid, how]) =>
        newEntry(entryUid(transactionId, mailboxUid), {
          transactionId,
          mailboxUid,
          recipient: how.recipient,
          envelopeFrom,
          rawRef: stored.ref,
          size: stored.size,
          transportQuarantine: rules.quarantine !== null,
          tag: how.tag,
          viaList: how.viaList,
        }),
      ),
    );
    const statusOf = new Map(boxes.map(([mailboxUid], i) => [mailboxUid, statuses[i]]));
    queued += statuses.filter((s) => s === 'queued').length;
    for (const r of results) {
      const boxes = byRecipient.get(r.recipient);
      if (r.status === 'queued' && boxes?.size && [...boxes].every((m) => statusOf.get(m) === 'duplicate')) r.status = 'duplicate';
    }
    // Spec: external list members get their copy relayed at once (once per transaction and list: the
    // id is derived). Trusting sender verification: while the sender is not verified, a list's copy
    // carries a rewritten From ("Name via list" <list>); recipients added by a transport rule get the message as it came.
    const byList = new Map<string, string[]>();
    for (const e of expansion.external) byList.set(e.viaList, [...new Set([...(byList.get(e.viaList) ?? []), e.address])]);
    for (const [list, envelopeTo] of byList) {
      const isList = list !== 'transport-rule';
      const raw = await rawBytes();
      const copy = isList && !sender.verified ? rewriteFrom(raw, { via: list, address: list }) : raw;
      await deps.outbound.send({
        id: entryUid(transactionId, `external:${list}`, 'relay'),
        kind: 'list-relay',
        envelopeFrom,
        envelopeTo,
        raw: copy,
      });
    }
  }
  if (unknown.length && envelopeFrom) {
    const local = await resolveRecipient(deps, envelopeFrom, domains);
    if (local.kind === 'mailbox') {
      const ndr = nonDeliveryReport(envelopeFrom, unknown, domainOf(envelopeFrom), headerValue(headers, 'subject'));
      const stored = await deps.port.storeRaw(ndr);
      const [s] = await createOnce(deps, [
        newEntry(entryUid(transactionId, local.mailboxUid, 'ndr'), {
          transactionId,
          mailboxUid: local.mailboxUid,
          recipient: envelopeFrom,
          envelopeFrom: '',
          rawRef: stored.ref,
          size: stored.size,
          transportQuarantine: false,
          tag: null,
          viaList: null,
        }),
      ]);
      if (s === 'queued') queued++;
    }
  }
  // Whoever handed it over (the MTA's route, a local send, a recall), the scan job files it now
  // rather than at its next period.
  if (queued) wakeWorkers(deps.config, 'scan');
  return { transactionId, results, queued };
}

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1);
