import { createHash } from 'node:crypto';
import { crashPoint } from '../crash-points/index.js';
import { acceptHandoff, servedDomains, type IngestDeps } from '../ingest/index.js';
import { type Folder, FolderModel, folderOf, loadRaw, type Message, MessageModel, moveMessage, publishMessage } from '../mail/index.js';
import type { Ctx } from '../context/index.js';
import { scanMessage, type Scanners } from '../scan/index.js';
import type { Row } from '../storage/index.js';
import { publishSendEvent } from '../events/index.js';
import { fileReport, headerBlock } from './dsn.js';
import { OutboundJobModel, type OutboundJob, type Refused } from './models.js';
import { mtaLogged } from './mta-log.js';
import { headerOf } from './raw.js';
import type { Transport, TransportResult } from './transport/index.js';
import { countEvent } from '../settings/index.js';

export interface SendDeps extends IngestDeps {
  transport: Transport;
  scanners: Scanners;
}

export type Job = Row<OutboundJob>;

const repo = (deps: SendDeps) => deps.store.repo<OutboundJob>(OutboundJobModel);

async function save(deps: SendDeps, j: Job, patch: Partial<OutboundJob>): Promise<Job> {
  // Version-checked: a worker that lost its lease (and so its claim) cannot overwrite the new holder.
  return repo(deps).update(j.uid, patch, { expectedVersion: j.version });
}

/**
 * Outbound scan (Spec: Outbound message, row 1): spam, malware or a scanner failure refuses the send.
 * The sender is an authenticated user of ours (its From was checked against the caller's rights):
 * rspamd gets it as User, as a submission server's milter passes the SASL login, so it applies its
 * rules for outgoing mail (and per-user rate limits) instead of checking SPF against our own address.
 */
export async function scanOutbound(deps: SendDeps, raw: Buffer, from: string, rcpts: string[]): Promise<string | null> {
  const v = await scanMessage(deps.config, deps.log, deps.scanners, { raw, from: from || undefined, rcpt: rcpts, user: from || undefined });
  if (v.virus) return `malware found: ${v.virus}`;
  if (v.virusScanFailed) return 'the virus scanner could not run';
  if (v.spam !== 'clean')
    return v.symbols.includes('SCAN_ENGINE_UNAVAILABLE') ? 'the spam scanner could not run' : `the spam scanner says ${v.spam}`;
  return null;
}

/** The copy for local recipients goes through the inbound path (rules, counts, events), once per job. */
async function deliverLocal(deps: SendDeps, j: Job, raw: Buffer): Promise<void> {
  const trusted = deps.config.get('mail:security:trusted_authserv_id').trim();
  const from = j.envelopeFrom;
  // From is in a domain we serve: a sender's From was checked against the caller's rights, and mail
  // the service originates (receipts, notices, rewritten relay copies) carries one of our addresses.
  // Our own verdict, under the trusted id; nothing is claimed for a From we do not serve.
  const fromHeader = headerOf(raw, 'from');
  const address = (/<([^>]+)>/.exec(fromHeader)?.[1] ?? fromHeader).trim().toLowerCase();
  const fromDomain = address.slice(address.lastIndexOf('@') + 1);
  const ours = Boolean(fromDomain) && (await servedDomains(deps)).has(fromDomain);
  const header =
    trusted && ours
      ? Buffer.from(`Authentication-Results: ${trusted}; dmarc=pass header.from=${fromDomain} (sent by this server)\r\n`)
      : Buffer.alloc(0);
  await acceptHandoff(deps, {
    raw: Buffer.concat([header, raw]),
    envelopeFrom: from,
    recipients: j.localRcpts,
    transactionId: `send-${j.uid}`,
  });
}

/**
 * The idempotency key of a hand-off: stable for the message and the recipients handed over, so every
 * retry of the same hand-off (after a temporary failure, a timeout, a crash) carries the same key and
 * a provider that deduplicates (the cloud API's Idempotency-Key) takes it once. A retry for fewer
 * recipients (some were accepted or refused meanwhile) is a different request and gets its own key.
 */
export function attemptKey(jobUid: string, rcpts: readonly string[]): string {
  return `${jobUid}:${createHash('sha256')
    .update([...rcpts].sort().join('\n'))
    .digest('hex')
    .slice(0, 16)}`;
}

const UNCERTAIN = 'it may or may not have left and is not sent again (check with the recipient, resend if needed)';

/**
 * Refusals the transport could not call either way (sendmail killed after reading the message): the
 * MTA log decides when it has the Message-ID (mail:transport:sendmail:log_path); otherwise they are
 * held for review, never retried blind.
 */
async function settleAmbiguous(deps: SendDeps, j: Job, result: TransportResult): Promise<{ result: TransportResult; review: Refused[] }> {
  const unsure = result.refused.filter((r) => r.ambiguous);
  if (!unsure.length) return { result, review: [] };
  const clear = { accepted: result.accepted, refused: result.refused.filter((r) => !r.ambiguous) };
  if (await mtaLogged(deps.config.get('mail:transport:sendmail:log_path'), j.messageId)) {
    deps.log.info({ job: j.uid, messageId: j.messageId }, 'ambiguous sendmail hand-off found in the MTA log: counted as handed over');
    return { result: { ...clear, accepted: [...clear.accepted, ...unsure.map((r) => r.rcpt)] }, review: [] };
  }
  deps.log.warn(
    { job: j.uid, messageId: j.messageId },
    'ambiguous sendmail hand-off not found in the MTA log: held for review, not resent',
  );
  return { result: clear, review: unsure.map((r) => ({ rcpt: r.rcpt, reason: `${r.reason}; ${UNCERTAIN}`, permanent: false })) };
}

function recordResult(deps: SendDeps, j: Job, result: TransportResult, review: Refused[] = []): Partial<OutboundJob> {
  const max = deps.config.get('mail:send:max_attempts');
  const refused: Refused[] = [...j.refused, ...review];
  const pending: string[] = [];
  for (const r of result.refused) {
    if (r.permanent || j.attempts >= max)
      refused.push(r.permanent ? r : { ...r, reason: `${r.reason} (gave up after ${j.attempts} attempts)` });
    else pending.push(r.rcpt);
  }
  const backoff = deps.config.get('mail:send:retry_backoff_seconds') * 1000 * j.attempts;
  return {
    accepted: [...new Set([...j.accepted, ...result.accepted])],
    refused,
    pending,
    review: j.review || review.length > 0,
    state: pending.length ? 'queued' : 'handed',
    nextAttemptAt: new Date(Date.now() + backoff),
    attemptId: null,
    attemptRcpts: [],
    lastError: result.refused.length
      ? result.refused
          .map((r) => `${r.rcpt}: ${r.reason}`)
          .join('; ')
          .slice(0, 2000)
      : null,
  };
}

/** A claim found the record in `handing`: its previous holder died between the attempt record and the answer. */
async function recover(deps: SendDeps, j: Job, raw: Buffer): Promise<Job> {
  if (deps.transport.name === 'api') {
    // The cloud API deduplicates by Idempotency-Key: the same attempt id again is safe.
    const result = await deps.transport.send({
      raw,
      envelopeFrom: j.envelopeFrom,
      envelopeTo: j.attemptRcpts,
      id: j.attemptId ?? attemptKey(j.uid, j.attemptRcpts),
    });
    return save(deps, j, recordResult(deps, j, result));
  }
  if (await mtaLogged(deps.config.get('mail:transport:sendmail:log_path'), j.messageId)) {
    deps.log.info({ job: j.uid, messageId: j.messageId }, 'interrupted hand-off found in the MTA log: counted as handed over');
    return save(deps, j, recordResult(deps, j, { accepted: j.attemptRcpts, refused: [] }));
  }
  // sendmail may or may not have taken it: sending again could duplicate. Held, and the sender told.
  deps.log.warn(
    { job: j.uid, messageId: j.messageId },
    'interrupted sendmail hand-off not found in the MTA log: held for review, not resent',
  );
  const uncertain = j.attemptRcpts.map((rcpt) => ({
    rcpt,
    reason: `the server stopped while handing the message to the mail transport; ${UNCERTAIN}`,
    permanent: false,
  }));
  return save(deps, j, {
    state: 'handed',
    review: true,
    refused: [...j.refused, ...uncertain],
    pending: j.pending.filter((r) => !j.attemptRcpts.includes(r)),
    attemptId: null,
    attemptRcpts: [],
  });
}

/** Moves the message record of a send into a folder of its mailbox (idempotent), optionally clearing the draft flag. */
export async function placeMessage(
  deps: SendDeps,
  j: Pick<OutboundJob, 'mailboxUid' | 'messageUid'>,
  role: 'outbox' | 'sent' | 'drafts',
  clearDraft: boolean,
): Promise<Row<Message> | null> {
  if (!j.mailboxUid || !j.messageUid) return null;
  const msg = await deps.store.repo<Message>(MessageModel).get(j.messageUid);
  if (!msg) return null;
  const folder = await folderOf(deps.store, j.mailboxUid, { folderRole: role });
  let moved = await moveMessage(deps as unknown as Ctx, msg, folder as Row<Folder>);
  if (clearDraft && moved.draft) {
    moved = await deps.store.repo<Message>(MessageModel).update(moved.uid, { draft: false });
    publishMessage(deps, 'update', moved);
  }
  return moved;
}

async function foldersOf(deps: SendDeps, mailboxUid: string): Promise<string[]> {
  const fs = await deps.store
    .repo<Folder>(FolderModel)
    .list({ filter: { mailboxUid, role: { $in: ['outbox', 'sent', 'drafts'] } }, limit: 10 });
  return fs.map((f) => f.uid);
}

/** Reports what the transport answered: Sent Items, events, DSN; the final state when nothing is pending. */
async function settle(deps: SendDeps, j: Job, opts: { sync: boolean }): Promise<Job> {
  const anyAccepted = j.accepted.length > 0 || j.localRcpts.length > 0;
  const mailboxUid = j.mailboxUid;
  const messageUid = j.messageUid;
  if (j.kind === 'message' && mailboxUid && messageUid) {
    const folders = await foldersOf(deps, mailboxUid);
    if (anyAccepted && !j.filedSent) {
      await placeMessage(deps, j, 'sent', true);
      crashPoint('send.after-sent-items');
      deps.events.emitMail('message.sent', {
        mailboxUid: mailboxUid,
        messageUid: messageUid,
        messageId: j.messageId,
        accepted: [...j.accepted, ...j.localRcpts],
        jobUid: j.uid,
      });
      publishSendEvent(deps.events, 'send-succeeded', {
        mailboxUid: mailboxUid,
        folderUids: folders,
        messageUid: messageUid,
        data: { accepted: [...j.accepted, ...j.localRcpts] },
      });
      j = await save(deps, j, { filedSent: true });
    }
    const fresh = j.refused.slice(j.reported);
    // A synchronous send with nothing accepted answers 502 with the reasons instead of a report.
    const answeredInline = opts.sync && !anyAccepted;
    if (fresh.length) {
      for (const r of fresh)
        deps.events.emitMail('send.failed', {
          mailboxUid: mailboxUid,
          messageUid: messageUid,
          messageId: j.messageId,
          rcpt: r.rcpt,
          reason: r.reason,
          permanent: r.permanent,
        });
      if (!answeredInline) {
        const raw = await loadRaw(deps, j.rawRef);
        await fileReport(deps, {
          mailboxUid: mailboxUid,
          to: j.envelopeFrom,
          subject: j.subject,
          messageId: j.messageId,
          originalHeaders: headerBlock(raw),
          refused: fresh,
          key: `${j.uid}:${j.reported}`,
          intro: j.review ? 'Delivery of your message could not be confirmed for these recipients:' : undefined,
        });
        crashPoint('send.after-report');
      }
      j = await save(deps, j, { reported: j.refused.length });
    }
    if (j.pending.length && j.state === 'queued') {
      publishSendEvent(deps.events, 'send-retrying', {
        mailboxUid: mailboxUid,
        folderUids: folders,
        messageUid: messageUid,
        data: { nextAttemptAt: j.nextAttemptAt.toISOString(), pending: j.pending },
      });
    } else if (!anyAccepted && j.state === 'handed') {
      publishSendEvent(deps.events, 'send-failed', {
        mailboxUid: mailboxUid,
        folderUids: folders,
        messageUid: messageUid,
        data: { refused: j.refused },
      });
    }
  }
  if (j.state !== 'handed' || j.pending.length) return j;
  const done = await save(deps, j, { state: j.review ? 'review' : anyAccepted ? 'sent' : 'failed', finishedAt: new Date() });
  await countEvent(deps, 'svcmail_sends_total', { result: done.state });
  return done;
}

/**
 * One pass of the state machine over a claimed record (the caller holds its lease). Every step is
 * recorded before the next, so a process killed anywhere leaves the record for the next claim.
 */
export async function advance(deps: SendDeps, job: Job, opts: { sync?: boolean } = {}): Promise<Job> {
  let j = job;
  if (j.state === 'queued' && j.kind === 'message' && j.background && !j.scanned) {
    // First pass of a background or scheduled send (Spec: Outbound message, rows 2-3): the draft goes
    // to the Outbox now. A draft deleted or replaced (compose) meanwhile cancels the send (before its
    // bytes are read: they may have gone with the draft when they were the same).
    if (!(await placeMessage(deps, j, 'outbox', false))) {
      const cancelled = await save(deps, j, {
        state: 'failed',
        localRcpts: [],
        pending: [],
        lastError: 'the draft was deleted or replaced before its send time: not sent',
        finishedAt: new Date(),
      });
      deps.log.info({ job: j.uid }, 'send cancelled: the draft is gone');
      return cancelled;
    }
  }
  const raw = await loadRaw(deps, j.rawRef);
  if (j.state === 'handing') j = await recover(deps, j, raw);
  if (j.state === 'queued') {
    if (!j.scanned && j.kind === 'message') {
      const refusedBy = await scanOutbound(deps, raw, j.envelopeFrom, [...j.localRcpts, ...j.pending]);
      if (refusedBy) {
        const all = [...j.localRcpts, ...j.pending].map((rcpt) => ({
          rcpt,
          reason: `refused by the outbound scan: ${refusedBy}`,
          permanent: true,
        }));
        j = await save(deps, j, { state: 'handed', localRcpts: [], pending: [], refused: [...j.refused, ...all], lastError: refusedBy });
        return settle(deps, j, { sync: Boolean(opts.sync) });
      }
      j = await save(deps, j, { scanned: true });
    }
    if (j.localRcpts.length && !j.localDone) {
      await deliverLocal(deps, j, raw);
      crashPoint('send.after-local');
      j = await save(deps, j, { localDone: true });
    }
    if (j.pending.length) {
      const attempts = j.attempts + 1;
      j = await save(deps, j, {
        state: 'handing',
        attempts,
        attemptId: attemptKey(j.uid, j.pending),
        attemptRcpts: j.pending,
        attemptStartedAt: new Date(),
      });
      crashPoint('send.before-transport');
      const answer = await deps.transport.send({ raw, envelopeFrom: j.envelopeFrom, envelopeTo: j.attemptRcpts, id: j.attemptId! });
      crashPoint('send.after-transport');
      const { result, review } = await settleAmbiguous(deps, j, answer);
      j = await save(deps, j, recordResult(deps, j, result, review));
    } else {
      j = await save(deps, j, { state: 'handed' });
    }
  }
  if (j.state === 'handed' || j.state === 'queued') j = await settle(deps, j, { sync: Boolean(opts.sync) });
  return j;
}
