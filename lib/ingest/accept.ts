import { createHash } from 'node:crypto';
import { ApiError } from '../errors/index.js';
import { crashPoint } from '../crash-points/index.js';
import type { Deps } from '../context/index.js';
import type { StagedBlob } from '../storage/index.js';
import { rewriteFrom } from './from-rewrite.js';
import { headerValue, prependHeaders, readHeaders, type HeaderBlock } from './headers.js';
import type { MailPort } from './mail-port.js';
import { IngestEntryModel, type IngestEntry } from './models.js';
import type { OutboundHook } from '../mail/index.js';
import { nonDeliveryReport, systemMessage } from './outbound.js';
import { expandRecipient, knownAddresses, resolveRecipient, servedDomains, type Expansion, type Resolution } from './resolve.js';
import { evaluateTransportRules, type TransportDecision, type TransportInput } from './transport-rules.js';
import { verifySender, type SenderVerification } from './verify.js';
import { wakeWorkers } from './wake.js';
import type { SmtpClient } from './envelope.js';

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
  /** The SMTP client the MTA received it from, when the MTA said. */
  client?: SmtpClient;
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
    | 'transactionId'
    | 'mailboxUid'
    | 'recipient'
    | 'envelopeFrom'
    | 'rawRef'
    | 'size'
    | 'transportQuarantine'
    | 'quarantineRule'
    | 'tag'
    | 'viaList'
  > &
    Partial<Pick<IngestEntry, 'clientAddress' | 'clientHelo' | 'clientHostname'>>,
): IngestEntry & { uid: string } {
  return {
    uid,
    clientAddress: null,
    clientHelo: null,
    clientHostname: null,
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

/** The hand-off as read before delivery: its ids, header block, verified sender and the transport rules' decision. */
interface Incoming {
  h: Handoff;
  transactionId: string;
  staged: StagedBlob | null;
  headers: HeaderBlock;
  sender: SenderVerification;
  envelopeFrom: string;
  rules: TransportDecision;
}

/** What resolving the recipients gave: mailboxes and external copies, and the answer for each recipient. */
interface Resolved {
  domains: Map<string, string>;
  expansion: Expansion;
  results: RecipientResult[];
  /** Recipients in a served domain with no such address: their local sender gets a non-delivery report. */
  unknown: string[];
  /** Recipient → the mailboxes it added. */
  byRecipient: Map<string, Set<string>>;
}

/** Reads the header block (only), verifies the sender and runs the transport rules. */
async function readIncoming(deps: IngestDeps, h: Handoff): Promise<Incoming> {
  const transactionId = transactionIdOf(h);
  const staged = Buffer.isBuffer(h.raw) ? null : h.raw;
  // Decisions before delivery read the header block only: a staged body keeps its first bytes in memory.
  const headers = readHeaders(staged ? staged.head : (h.raw as Buffer));
  const sender = verifySender(deps.config, headers);
  const envelopeFrom = h.envelopeFrom.trim().toLowerCase();
  const rules = await transportRulesOf(deps, { headers, envelopeFrom, recipients: h.recipients }, transactionId);
  return { h, transactionId, staged, headers, sender, envelopeFrom, rules };
}

/** Spec: transport rules run once per message before recipients are resolved; when evaluating them fails, delivery continues without them. */
async function transportRulesOf(deps: IngestDeps, input: TransportInput, transactionId: string): Promise<TransportDecision> {
  try {
    return await evaluateTransportRules(deps, input);
  } catch (e) {
    deps.log.warn({ err: (e as Error).message, transactionId }, 'transport rules failed; delivering without them');
    return { reject: null, addHeaders: [], addRecipients: [], quarantine: null };
  }
}

/** A transport rule rejected the message: notifies a verified sender and answers 'rejected' for every recipient. */
async function rejectByRule(deps: IngestDeps, msg: Incoming, reject: NonNullable<TransportDecision['reject']>): Promise<HandoffResult> {
  const { sender, headers } = msg;
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
        body: reject.notice ?? 'Your message was rejected by a policy of the receiving organisation.',
        headers: { 'Auto-Submitted': 'auto-replied' },
      }),
    });
  }
  return {
    transactionId: msg.transactionId,
    queued: 0,
    results: msg.h.recipients.map((r) => ({ recipient: r, status: 'rejected', reason: `transport rule ${reject.rule}` })),
  };
}

/** Resolves every recipient (and those a transport rule adds) into mailboxes and external copies, with a result for each. */
async function resolveRecipients(deps: IngestDeps, msg: Incoming): Promise<Resolved> {
  const { h, rules } = msg;
  const domains = await servedDomains(deps);
  const out: Resolved = {
    domains,
    expansion: { mailboxes: new Map(), external: [], refusedLists: [], cut: [] },
    results: [],
    unknown: [],
    byRecipient: new Map(),
  };
  const allRecipients = [...h.recipients, ...rules.addRecipients.filter((r) => !h.recipients.includes(r))];
  const known = await knownAddresses(deps, allRecipients, domains);
  for (const rcpt of allRecipients) {
    const r = await resolveRecipient(deps, rcpt, domains, known);
    if (r.kind === 'unknown') answerUnresolved(rcpt, r.reason, rules, out);
    else await expandResolved(deps, rcpt, r, msg.sender, out);
  }
  if (!out.results.some((r) => r.status !== 'rejected' || r.reason !== 'domain not served')) {
    throw new ApiError('api-119', 'Forbidden: no recipient is in a domain served here', {
      details: [{ path: 'X-Envelope-To', message: 'domain-not-served' }],
    });
  }
  return out;
}

/** Answers a recipient that resolved to nothing: relayed when a transport rule added it outside the served domains, else rejected or unknown. */
function answerUnresolved(rcpt: string, reason: 'domain' | 'recipient', rules: TransportDecision, out: Resolved): void {
  if (reason === 'domain' && rules.addRecipients.includes(rcpt)) {
    out.expansion.external.push({ address: rcpt, viaList: 'transport-rule' });
    out.results.push({ recipient: rcpt, status: 'relayed' });
    return;
  }
  out.results.push({
    recipient: rcpt,
    status: reason === 'domain' ? 'rejected' : 'unknown',
    reason: reason === 'domain' ? 'domain not served' : 'no such recipient',
  });
  if (reason === 'recipient') out.unknown.push(rcpt);
}

/** Expands a resolved recipient (a mailbox or a list) and answers it: queued, relayed, or rejected by a members-only list. */
async function expandResolved(deps: IngestDeps, rcpt: string, r: Resolution, sender: SenderVerification, out: Resolved): Promise<void> {
  const { expansion } = out;
  const before = new Set(expansion.mailboxes.keys());
  const ext = expansion.external.length;
  const refused = expansion.refusedLists.length;
  await expandRecipient(deps, rcpt, r, { sender: sender.fromAddress, senderVerified: sender.verified, domains: out.domains }, expansion);
  const added = new Set([...expansion.mailboxes.keys()].filter((m) => !before.has(m)));
  out.byRecipient.set(rcpt, added);
  if (expansion.refusedLists.length > refused && !added.size)
    out.results.push({ recipient: rcpt, status: 'rejected', reason: 'members-only list' });
  else
    out.results.push({
      recipient: rcpt,
      status: expansion.external.length > ext && !added.size ? 'relayed' : 'queued',
      mailboxes: added.size,
    });
}

/**
 * Stores the raw message once and queues an entry per mailbox; a recipient all of whose entries
 * were queued before is answered 'duplicate'. Returns how many entries were newly queued.
 */
async function queueMailboxes(deps: IngestDeps, msg: Incoming, resolved: Resolved, rawBytes: () => Promise<Buffer>): Promise<number> {
  const { staged, rules, transactionId, envelopeFrom } = msg;
  const stored =
    staged && !rules.addHeaders.length
      ? await staged.commit().then((b) => ({ ref: b.blobId, size: b.size }))
      : await deps.port.storeRaw(await rawBytes());
  crashPoint('ingest.after-blob');
  const boxes = [...resolved.expansion.mailboxes];
  const statuses = await createOnce(
    deps,
    boxes.map(([mailboxUid, how]) =>
      newEntry(entryUid(transactionId, mailboxUid), {
        transactionId,
        mailboxUid,
        recipient: how.recipient,
        envelopeFrom,
        clientAddress: msg.h.client?.address ?? null,
        clientHelo: msg.h.client?.helo ?? null,
        clientHostname: msg.h.client?.hostname ?? null,
        rawRef: stored.ref,
        size: stored.size,
        transportQuarantine: rules.quarantine !== null,
        quarantineRule: rules.quarantine,
        tag: how.tag,
        viaList: how.viaList,
      }),
    ),
  );
  const statusOf = new Map(boxes.map(([mailboxUid], i) => [mailboxUid, statuses[i]]));
  for (const r of resolved.results) {
    const boxes = resolved.byRecipient.get(r.recipient);
    if (r.status === 'queued' && boxes?.size && [...boxes].every((m) => statusOf.get(m) === 'duplicate')) r.status = 'duplicate';
  }
  return statuses.filter((s) => s === 'queued').length;
}

/**
 * Spec: external list members get their copy relayed at once (once per transaction and list: the
 * id is derived). Trusting sender verification: while the sender is not verified, a list's copy
 * carries a rewritten From ("Name via list" <list>); recipients added by a transport rule get the message as it came.
 */
async function relayExternal(deps: IngestDeps, msg: Incoming, expansion: Expansion, rawBytes: () => Promise<Buffer>): Promise<void> {
  const byList = new Map<string, string[]>();
  for (const e of expansion.external) byList.set(e.viaList, [...new Set([...(byList.get(e.viaList) ?? []), e.address])]);
  for (const [list, envelopeTo] of byList) {
    const isList = list !== 'transport-rule';
    const raw = await rawBytes();
    const copy = isList && !msg.sender.verified ? rewriteFrom(raw, { via: list, address: list }) : raw;
    await deps.outbound.send({
      id: entryUid(msg.transactionId, `external:${list}`, 'relay'),
      kind: 'list-relay',
      envelopeFrom: msg.envelopeFrom,
      envelopeTo,
      raw: copy,
    });
  }
}

/** Spec: a local sender of an unknown recipient gets a non-delivery report, queued to its mailbox. Returns 1 when newly queued. */
async function queueNonDeliveryReport(deps: IngestDeps, msg: Incoming, resolved: Resolved): Promise<number> {
  const { envelopeFrom, transactionId } = msg;
  const local = await resolveRecipient(deps, envelopeFrom, resolved.domains);
  if (local.kind !== 'mailbox') return 0;
  const ndr = nonDeliveryReport(envelopeFrom, resolved.unknown, domainOf(envelopeFrom), headerValue(msg.headers, 'subject'));
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
      quarantineRule: null,
      tag: null,
      viaList: null,
    }),
  ]);
  return s === 'queued' ? 1 : 0;
}

/**
 * Spec: Inbound message, row "received": resolve every recipient, store the raw message once, queue
 * one entry per mailbox, and answer with a result per recipient. Every entry is committed before
 * this returns (so before the 202), and the worker's scan job is woken when any was queued.
 */
export async function acceptHandoff(deps: IngestDeps, h: Handoff): Promise<HandoffResult> {
  const msg = await readIncoming(deps, h);
  if (msg.rules.reject) return rejectByRule(deps, msg, msg.rules.reject);
  const resolved = await resolveRecipients(deps, msg);
  // The bytes as delivered (with any header a transport rule adds): read whole only when needed.
  let whole: Buffer | null = null;
  const rawBytes = async () => (whole ??= prependHeaders(msg.staged ? await msg.staged.read() : (h.raw as Buffer), msg.rules.addHeaders));
  let queued = 0;
  if (resolved.expansion.mailboxes.size || resolved.expansion.external.length) {
    queued += await queueMailboxes(deps, msg, resolved, rawBytes);
    await relayExternal(deps, msg, resolved.expansion, rawBytes);
  }
  if (resolved.unknown.length && msg.envelopeFrom) queued += await queueNonDeliveryReport(deps, msg, resolved);
  // Whoever handed it over (the MTA's route, a local send, a recall), the scan job files it now
  // rather than at its next period.
  if (queued) wakeWorkers(deps, 'scan');
  return { transactionId: msg.transactionId, results: resolved.results, queued };
}

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1);
