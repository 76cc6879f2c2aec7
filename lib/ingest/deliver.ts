import { isApiError } from '../errors/index.js';
import { exceedsQuota, MailboxModel, type Mailbox } from '../mail/index.js';
import { scanLimitOf, scanMessage, type Scanners, type ScanVerdict } from '../scan/index.js';
import type { Patch, Row } from '../storage/index.js';
import type { IngestDeps } from './accept.js';
import {
  classifyFocused,
  consumeControl,
  controlKindOf,
  isAutomated,
  isDispositionReport,
  maybeAutoReply,
  processInvitations,
  recordCorrespondent,
  senderListVerdict,
  senderOf,
  type ControlHooks,
} from './delivery-rules.js';
import { crashPoint } from '../crash-points/index.js';
import type { FiledCopy, MailPort } from './mail-port.js';
import type { PreparedMail } from './prepare.js';
import type { RoundReads } from './round-reads.js';
import { rewriteFrom } from './from-rewrite.js';
import { bareAddress, domainOf, headerValue, readHeaders, type HeaderBlock } from './headers.js';
import { QuarantineModel, type IngestEntry, type QuarantineItem } from './models.js';
import { servedDomains } from './resolve.js';
import { verifySender, type SenderVerification } from './verify.js';

export interface WorkerDeps extends IngestDeps {
  scanners: Scanners;
  control: ControlHooks;
}

/** One message, loaded, prepared (parsed, sanitized, indexed) and scanned once however many entries (recipients) share it. */
export interface Prepared {
  raw: Buffer;
  mail: PreparedMail;
  headers: HeaderBlock;
  verdict: ScanVerdict;
}

export type PrepareCache = Map<string, Promise<Prepared>>;

/**
 * Writes a scan round makes once for all its entries, in the transaction that releases them
 * (lib/jobs/scan.ts): without it each delivery records its correspondent in a commit of its own.
 */
export interface RoundWrites {
  correspondent(mailboxUid: string, address: string): void;
  /** A filed copy's full-text document (written when the round's entries are released). */
  text(messageUid: string, document: string): void;
  /**
   * Sends events once the round's closing commit is done: the round files its copies with
   * asynchronous commits (FileRequest.durableLater), which that synchronous commit makes durable.
   */
  publish(send: () => void): void;
}

export function prepare(deps: WorkerDeps, entry: IngestEntry, cache: PrepareCache): Promise<Prepared> {
  let p = cache.get(entry.rawRef);
  if (!p) {
    p = (async () => {
      const raw = await deps.port.loadRaw(entry.rawRef);
      // HTML is sanitized before any client can see it (the filed copy carries the clean HTML).
      const [mail, verdict] = await Promise.all([
        deps.port.prepare(raw),
        // Every round of the worker shares one limit on scans in flight, adapted to the scanners' latency.
        scanLimitOf(deps.config).run(() =>
          scanMessage(deps.config, deps.log, deps.scanners, {
            raw,
            from: entry.envelopeFrom || undefined,
            rcpt: [entry.recipient],
            ip: entry.clientAddress ?? undefined,
            helo: entry.clientHelo ?? undefined,
            hostname: entry.clientHostname ?? undefined,
            queueId: entry.transactionId,
          }),
        ),
      ]);
      return { raw, mail, headers: readHeaders(raw), verdict };
    })();
    cache.set(entry.rawRef, p);
    p.catch(() => undefined); // kept for the round: every entry of a message that could not be prepared fails alike, without a second try now
  }
  return p;
}

/** PostgreSQL text refuses NUL (SQLSTATE 22021): a header carrying one must not make the message unholdable. */
const noNul = (s: string) => s.replaceAll('\u0000', '');

async function quarantine(
  deps: WorkerDeps,
  entry: IngestEntry & { uid: string },
  prep: Prepared,
  reason: QuarantineItem['reason'],
  detail: string | null,
): Promise<Patch<IngestEntry>> {
  try {
    await deps.store.repo<QuarantineItem>(QuarantineModel).create({
      uid: entry.uid,
      mailboxUid: entry.mailboxUid,
      entryUid: entry.uid,
      rawRef: entry.rawRef,
      size: entry.size,
      envelopeFrom: entry.envelopeFrom,
      recipient: entry.recipient,
      from: noNul(headerValue(prep.headers, 'from')).slice(0, 998),
      subject: noNul(headerValue(prep.headers, 'subject')).slice(0, 998),
      reason,
      detail,
      headers: noNul(prep.headers.text).slice(0, 64 * 1024),
    });
  } catch (e) {
    if (!(isApiError(e) && e.code === 'api-112')) throw e; // a re-run after a crash: already held
  }
  return { state: 'quarantined', verdict: verdictOf(prep.verdict, reason), finishedAt: new Date() };
}

const verdictOf = (v: ScanVerdict, extra?: string): Record<string, unknown> => ({
  spam: v.spam,
  virus: v.virus,
  virusScanFailed: v.virusScanFailed,
  symbols: v.symbols,
  score: v.score,
  ...(v.devFallback.length ? { devFallback: v.devFallback } : {}),
  ...(extra ? { reason: extra } : {}),
});

/** One entry on its way to its mailbox: what the delivery rules read as they run in order. */
interface Delivery {
  deps: WorkerDeps;
  entry: IngestEntry & { uid: string };
  prep: Prepared;
  box: Row<Mailbox>;
  auth: SenderVerification;
  /** The From address, else the envelope sender. */
  sender: string;
  junk: boolean;
  round?: RoundWrites;
  reads?: RoundReads;
}

type RuleOutcome = Awaited<ReturnType<MailPort['applyRules']>>;

/** Delivery rule 2: consumes a control message (recall, read receipt for us, ACME challenge); the finishing patch when it was one. */
async function consumeIfControl(d: Delivery): Promise<Patch<IngestEntry> | null> {
  const { deps, entry, prep, auth } = d;
  // The served domains decide only whether a verified disposition report is a read receipt for us: read them then only.
  const control = controlKindOf(
    prep.headers,
    auth.verified,
    auth.verified && isDispositionReport(prep.headers) ? new Set((await servedDomains(deps)).keys()) : new Set(),
  );
  if (
    control &&
    (await consumeControl(deps, deps.control, entry.uid, {
      ...control,
      mailboxUid: entry.mailboxUid,
      sender: d.sender,
      rawRef: entry.rawRef,
    }))
  ) {
    return { state: 'consumed', verdict: verdictOf(prep.verdict, control.kind), finishedAt: new Date() };
  }
  return null;
}

/** Filter-rule forward: hands the message to the outbound path once per entry (the id is derived from it). */
async function forwardCopy(d: Delivery, forwardTo: string[]): Promise<void> {
  const { box, prep, entry } = d;
  // Spec: Trusting sender verification — an unverified sender's forwarding copy gets a rewritten From.
  const raw = d.auth.verified ? prep.raw : rewriteFrom(prep.raw, { via: box.address, address: `no-reply@${domainOf(box.address)}` });
  await d.deps.outbound.send({
    id: `fwd-${entry.uid.slice(0, 56)}`,
    kind: 'forward',
    envelopeFrom: box.address,
    envelopeTo: forwardTo,
    raw,
  });
}

/** Delivery rule 5: files the message (Inbox mail classified Focused or Other) and one more record per filter-rule copy. */
async function fileCopies(d: Delivery, rules: RuleOutcome, copies: string[], automated: boolean): Promise<FiledCopy[]> {
  const { deps, entry, prep, junk, round, reads } = d;
  const folderRole = junk ? 'junk' : 'inbox';
  const focused =
    folderRole === 'inbox' && !rules.folderUid ? await classifyFocused(deps, entry.mailboxUid, d.sender, automated, reads) : undefined;
  const receiptTo = junk ? null : receiptAddress(prep.headers, d.auth);
  const deferText = round ? (uid: string, doc: string) => round.text(uid, doc) : undefined;
  const common = {
    mailboxUid: entry.mailboxUid,
    folderRole,
    labels: rules.labels,
    raw: prep.raw,
    prepared: prep.mail,
    flags: rules.flags,
    receiptTo,
    senderVerified: d.auth.verified,
    rawRef: entry.rawRef,
    deferText,
    durableLater: round,
  } as const;
  const filed = await deps.port.file({ ...common, folderUid: junk ? undefined : rules.folderUid, focused, idempotencyKey: entry.uid });
  crashPoint('ingest.between-copies');
  // Filter-rule copy: one more message record per folder, sharing the raw blob (each holds a reference).
  const all: FiledCopy[] = [filed];
  for (const folderUid of copies)
    all.push(await deps.port.file({ ...common, folderUid, idempotencyKey: `${entry.uid}:copy:${folderUid}` }));
  crashPoint('ingest.after-file');
  return all;
}

/** Delivery rule 6: out-of-office, invitations and known correspondents for delivered non-junk mail. */
async function afterDelivery(d: Delivery, automated: boolean, filed: FiledCopy): Promise<void> {
  const { deps, entry, box, sender, round, reads } = d;
  await maybeAutoReply(
    deps,
    deps.outbound,
    { mailboxUid: entry.mailboxUid, mailboxAddress: box.address, sender, automated, subject: headerValue(d.prep.headers, 'subject') },
    reads,
  );
  await processInvitations(
    deps,
    entry.uid,
    {
      mailboxUid: entry.mailboxUid,
      addresses: [box.address, ...box.aliases, entry.recipient],
      from: d.auth.fromAddress,
      verified: d.auth.verified,
    },
    filed.messageUid,
    d.prep.mail.parsed,
  );
  if (!automated && sender) {
    if (round) round.correspondent(entry.mailboxUid, sender);
    else await recordCorrespondent(deps, entry.mailboxUid, sender);
  }
}

/** Delivery rule 7: appends each filed copy (the first is the delivery, the rest filter-rule copies) to the mail event stream. */
function publishDelivered(d: Delivery, copies: FiledCopy[]): void {
  const { deps, entry, junk } = d;
  const [filed] = copies;
  const delivered = () => {
    for (const copy of copies) {
      deps.events.emitMail('message.delivered', {
        mailboxUid: entry.mailboxUid,
        messageUid: copy.messageUid,
        folderUid: copy.folderUid ?? null,
        folderRole: junk ? 'junk' : 'inbox',
        junk,
        entryUid: entry.uid,
        from: d.sender,
        subject: headerValue(d.prep.headers, 'subject'),
        ...(copy === filed ? {} : { copy: true }),
      });
    }
  };
  if (d.round) d.round.publish(delivered);
  else delivered();
}

/**
 * Spec: Inbound message state table and per-mailbox delivery rules, in order. Returns the patch
 * that finishes the entry. Filing is idempotent per entry uid, so a re-run after a crash files once.
 */
export async function deliverEntry(
  deps: WorkerDeps,
  entry: IngestEntry & { uid: string },
  cache: PrepareCache,
  round?: RoundWrites,
  reads?: RoundReads,
): Promise<Patch<IngestEntry>> {
  const prep = await prepare(deps, entry, cache);
  const { headers, verdict } = prep;
  if (entry.transportQuarantine) return quarantine(deps, entry, prep, 'transport-rule', entry.quarantineRule ?? null);
  if (verdict.quarantine) return quarantine(deps, entry, prep, verdict.virus ? 'virus' : 'virus-scan-failed', verdict.virus);

  const box = reads ? reads.mailbox(entry.mailboxUid) : await deps.store.repo<Mailbox>(MailboxModel).get(entry.mailboxUid);
  if (!box) return { state: 'discarded', lastError: 'the mailbox no longer exists', finishedAt: new Date() };
  const auth = verifySender(deps.config, headers);
  const sender = senderOf(headers, entry.envelopeFrom);
  // 1. blocked and safe senders: deliver versus junk only.
  const junk = senderListVerdict(box, sender, auth.verified, verdict.spam !== 'clean');
  const d: Delivery = { deps, entry, prep, box, auth, sender, junk, round, reads };
  // 2. control messages are consumed, not filed.
  const consumed = junk ? null : await consumeIfControl(d);
  if (consumed) return consumed;
  // 3. filter rules on mail that is not junk (size conditions see the raw message size).
  const rules = junk
    ? {}
    : await deps.port.applyRules(entry.mailboxUid, prep.mail.parsed, entry.size, reads?.filterRules(entry.mailboxUid));
  if (rules.forwardTo?.length) await forwardCopy(d, rules.forwardTo);
  if (rules.discard) return { state: 'discarded', verdict: verdictOf(verdict, 'filter rule'), finishedAt: new Date() };
  const copies = rules.copyTo ?? [];
  // 4. quota: every copy a rule files counts (the mailbox as read above, a moment ago).
  const size = entry.size * (1 + copies.length);
  if (reads ? !reads.reserve(entry.mailboxUid, size) : exceedsQuota(box, size)) return quarantine(deps, entry, prep, 'over-quota', null);
  // 5. filing.
  const automated = isAutomated(headers, entry.envelopeFrom);
  const filedCopies = await fileCopies(d, rules, copies, automated);
  // 6. what follows delivery of non-junk mail.
  if (!junk) await afterDelivery(d, automated, filedCopies[0]);
  // 7. the mail event stream.
  crashPoint('ingest.before-event');
  publishDelivered(d, filedCopies);
  return {
    state: junk ? 'junk' : 'delivered',
    folderRole: junk ? 'junk' : 'inbox',
    messageUid: filedCopies[0].messageUid,
    verdict: verdictOf(verdict),
    finishedAt: new Date(),
  };
}

/**
 * The address a read receipt is owed to (RFC 8098 Disposition-Notification-To), kept only for a
 * verified sender and only inside the From domain (Spec: Trusting sender verification — read
 * receipts need a verified sender; otherwise anyone could learn when a mailbox reads its mail).
 */
function receiptAddress(h: HeaderBlock, auth: SenderVerification): string | null {
  const to = bareAddress(headerValue(h, 'disposition-notification-to'));
  if (!to || !auth.verified || !/^[^\s@]+@[^\s@]+$/.test(to) || domainOf(to) !== domainOf(auth.fromAddress)) return null;
  return to;
}
