import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { loadRaw, type Message, MessageModel, type MessageRecord, parseMessage, publishMessage, storeRaw } from '../mail/index.js';
import type { ResourceDecl } from '../resources/index.js';
import type { Repo } from '../storage/index.js';
import type { Ctx } from '../context/index.js';
import { dkimSign } from './dkim.js';
import { applyEncryptionPolicy, resolveRecipients, type ResolvedRcpt } from './encryption-plan.js';
import { countEvent } from '../settings/index.js';
import { advance, placeMessage, scanOutbound, type Job, type SendDeps } from './dispatch.js';
import { OutboundJobModel, type OutboundJob, type Refused } from './models.js';
import { permitAddresses } from './permit.js';
import { headerOf, outgoingRaw } from './raw.js';

export const sendBody = z
  .object({
    background: z.boolean().default(false),
    /** Scheduled send (older clients; compose sets the draft's sendAt): written to the draft, handled like the Outbox once reached. */
    sendAt: z.coerce.date().meta({ type: 'string', format: 'date-time' }).optional(),
  })
  .strict()
  .default({ background: false });
export type SendBody = z.output<typeof sendBody>;

export interface SendAnswer {
  status: 200 | 202;
  body: Record<string, unknown>;
}

const bare = (v: string) => (/<([^>]+)>/.exec(v)?.[1] ?? v).trim().toLowerCase();
const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();
export const jobUidOf = (messageUid: string) => `send-${messageUid}`;

function view(j: Job): Record<string, unknown> {
  return {
    uid: j.uid,
    state: j.state,
    messageUid: j.messageUid,
    messageId: j.messageId,
    accepted: [...j.accepted, ...j.localRcpts],
    refused: j.refused,
    pending: j.pending,
    nextAttemptAt: j.nextAttemptAt,
    attempts: j.attempts,
  };
}

/** What sending needs from the resource layer (the messages and mailboxes declarations, ACL-checked loads). */
interface SendDecls {
  messages: ResourceDecl;
  mailboxes: ResourceDecl;
  load(ctx: Ctx, d: ResourceDecl, uid: string, right: 'write'): Promise<Record<string, unknown>>;
}

/** When the draft goes: at its sendAt (scheduled while that is ahead), in the background, or now. */
interface Timing {
  sendAt: Date | null;
  scheduled: boolean;
  background: boolean;
}

/** The draft as it is sent: its source, its parsed fields, its From and Sender, its recipients. */
interface DraftSource {
  raw: Buffer;
  parsed: Awaited<ReturnType<typeof parseMessage>>;
  from: string;
  sender: string;
  rcpts: string[];
}

/** The recipients by route: delivered here, handed to the transport, refused at once. */
interface Routes {
  localRcpts: string[];
  pending: string[];
  refused: Refused[];
}

/** The bytes the Outbox record hands over, as stored, with their Message-ID. */
interface Outgoing {
  messageId: string;
  rawRef: string;
  size: number;
}

/** Loads the draft with write access (invisible → 404); anything but a draft is refused. */
async function loadDraft(ctx: Ctx, decls: SendDecls, uid: string): Promise<MessageRecord> {
  const msg = (await decls.load(ctx, decls.messages, uid, 'write')) as unknown as MessageRecord;
  if (!msg.draft) throw new ApiError('api-120', 'only a draft can be sent');
  return msg;
}

/** Works out when the draft goes (Spec: Outbound message, rows 2 and 3); any sendAt makes the send a background one. */
function timingOf(msg: MessageRecord, body: SendBody): Timing {
  // Scheduled send (Spec: Outbound message, row 3): the time is the draft's sendAt (set through
  // compose); a sendAt in the request (older clients) is written to the draft too.
  const sendAt = body.sendAt ?? msg.sendAt ?? null;
  const scheduled = Boolean(sendAt && sendAt.getTime() > Date.now());
  const background = body.background || Boolean(sendAt);
  return { sendAt, scheduled, background };
}

/** Reads the draft's source and checks its From and Sender (permitted to the caller) and that it has recipients. */
async function readDraft(ctx: Ctx, mailboxes: ResourceDecl, msg: MessageRecord): Promise<DraftSource> {
  const raw = await loadRaw(ctx, msg.blobId);
  const parsed = await parseMessage(raw);
  const from = parsed.fields.from?.address ?? '';
  if (!from) throw invalid('the draft has no From address', [{ path: 'from', message: 'missing' }]);
  const sender = bare(headerOf(raw, 'sender'));
  await permitAddresses(ctx, mailboxes, [from, sender]);
  const rcpts = [...new Set([...parsed.fields.to, ...parsed.fields.cc, ...parsed.fields.bcc].map((a) => a.address.toLowerCase()))];
  if (!rcpts.length) throw invalid('the draft has no recipients', [{ path: 'to', message: 'empty' }]);
  return { raw, parsed, from, sender, rcpts };
}

/** Splits the recipients: other domains go to the transport, unknown local ones are refused, the rest are delivered here. */
function routeRecipients(resolved: ResolvedRcpt[]): Routes {
  const routes: Routes = { localRcpts: [], pending: [], refused: [] };
  for (const r of resolved) {
    if (!r.sameOrg) routes.pending.push(r.address);
    else if (r.res?.kind === 'unknown') routes.refused.push({ rcpt: r.address, reason: 'no such recipient here', permanent: true });
    else routes.localRcpts.push(r.address);
  }
  return routes;
}

/** Makes the outgoing bytes: scanned now for a synchronous send (the send job scans a background one), DKIM-signed, stored. */
async function prepareOutgoing(ctx: Ctx, deps: SendDeps, draft: DraftSource, background: boolean): Promise<Outgoing> {
  const out = outgoingRaw(draft.raw, domainOf(draft.from));
  if (!background) {
    const scan = await scanOutbound(deps, out.raw, draft.from, draft.rcpts);
    if (scan) throw new ApiError('api-114', `the message was refused by the outbound scan: ${scan}`);
  }
  const signed = (await dkimSign(ctx.config, out.raw, domainOf(draft.from))).raw;
  const stored = await storeRaw(ctx, signed);
  return { messageId: out.messageId, rawRef: stored.blobId, size: stored.size };
}

/**
 * Says when the send job may take the record: a scheduled send at its time; any other only after
 * the lease, so no worker (of this copy or another) starts it before the request's own writes are
 * committed — a background send is made due once the draft is in the Outbox (queueInBackground),
 * and should this process die first, the job takes the record when the lease ends.
 */
function dueAt(timing: Timing, leaseMs: number): Date {
  return timing.scheduled ? timing.sendAt! : new Date(Date.now() + leaseMs);
}

/** Builds the Outbox record of the send, queued and not yet attempted. */
function outboundJob(
  msg: MessageRecord,
  draft: DraftSource,
  routes: Routes,
  outgoing: Outgoing,
  background: boolean,
  due: Date,
): OutboundJob {
  return {
    kind: 'message',
    mailboxUid: msg.mailboxUid,
    messageUid: msg.uid,
    handoffUid: null,
    rawRef: outgoing.rawRef,
    size: outgoing.size,
    messageId: outgoing.messageId,
    subject: draft.parsed.fields.subject,
    envelopeFrom: draft.sender || draft.from,
    localRcpts: routes.localRcpts,
    localDone: false,
    pending: routes.pending,
    accepted: [],
    refused: routes.refused,
    state: 'queued',
    background,
    scanned: !background,
    attempts: 0,
    attemptId: null,
    attemptRcpts: [],
    attemptStartedAt: null,
    nextAttemptAt: due,
    filedSent: false,
    review: false,
    reported: 0,
    lastError: null,
    finishedAt: null,
  };
}

/** Background send (Spec: Outbound message, rows 2 and 3): answers 202, leaving a scheduled draft in Drafts or moving it to the Outbox. */
async function queueInBackground(
  ctx: Ctx,
  deps: SendDeps,
  msg: MessageRecord,
  body: SendBody,
  job: Job,
  timing: Timing,
): Promise<SendAnswer> {
  if (body.sendAt && msg.sendAt?.getTime() !== body.sendAt.getTime()) {
    const updated = await ctx.store.repo<Message>(MessageModel).update(msg.uid, { sendAt: body.sendAt });
    publishMessage(ctx, 'update', updated);
  }
  // A scheduled draft stays a draft in Drafts until its time; the send job then moves it to the
  // Outbox and sends it like a background send (deleting or replacing the draft cancels it).
  if (timing.scheduled) return { status: 202, body: { ...view(job), state: 'scheduled', sendAt: timing.sendAt } };
  await placeMessage(deps, job, 'outbox', false);
  // Due now that the draft is in the Outbox: the job never races the request's own move.
  const due = await ctx.store
    .repo<OutboundJob>(OutboundJobModel)
    .update(job.uid, { nextAttemptAt: new Date() }, { expectedVersion: job.version });
  wakeWorkers(ctx, 'send');
  return { status: 202, body: view(due) };
}

/** Lists why no recipient was accepted: the refusals, and the last error for each recipient still pending. */
function reasonsOf(job: Job): Refused[] {
  return [...job.refused, ...job.pending.map((rcpt) => ({ rcpt, reason: job.lastError ?? 'temporary failure', permanent: false }))];
}

/** Settles a send no recipient accepted as failed (counted once); a hand-off held for review is left as it is. */
async function settleFailed(ctx: Ctx, jobs: Repo<OutboundJob>, job: Job, reasons: Refused[]): Promise<Job> {
  // A hand-off that may or may not have left stays held for review (settled and counted as such):
  // marking it failed would let a resend hand it over a second time (Spec: never sent twice).
  if (job.review) return job;
  const counted = job.state === 'failed'; // settled as failed already (and counted there)
  const failed = await jobs.update(
    job.uid,
    { state: 'failed', pending: [], refused: reasons, finishedAt: new Date() },
    { expectedVersion: job.version },
  );
  if (!counted) await countEvent(ctx, 'svcmail_sends_total', { result: 'failed' });
  return failed;
}

/** Builds the 502 error (api-115) for a send no recipient accepted, naming each recipient's reason. */
function noneAccepted(reasons: Refused[]): ApiError {
  return new ApiError(
    'api-115',
    `no recipient was accepted: ${reasons
      .map((r) => `${r.rcpt}: ${r.reason}`)
      .join('; ')
      .slice(0, 1000)}`,
    { details: reasons.map((r) => ({ path: r.rcpt, message: r.reason })) },
  );
}

/** Synchronous send (Spec: Outbound message, row 1): claims the record, hands it over now, releases it whatever happened. */
async function sendNow(
  ctx: Ctx,
  deps: SendDeps,
  jobs: Repo<OutboundJob>,
  queued: Job,
  owner: string,
  leaseMs: number,
): Promise<SendAnswer> {
  let job = queued;
  const [claimed] = await jobs.claim({ uid: job.uid }, { owner, leaseMs, limit: 1 });
  if (!claimed) throw new ApiError('api-120', 'this message is already being sent');
  try {
    job = await advance(deps, claimed, { sync: true });
    if (!job.accepted.length && !job.localRcpts.length) {
      // Spec: 502 when the transport accepts no recipient; the draft stays in Drafts.
      const reasons = reasonsOf(job);
      job = await settleFailed(ctx, jobs, job, reasons);
      throw noneAccepted(reasons);
    }
    return { status: 200, body: view(job) };
  } finally {
    await jobs.release(queued.uid, owner, job.state === 'queued' ? { nextAttemptAt: job.nextAttemptAt } : {}).catch(() => undefined);
  }
}

/**
 * Spec: POST /api/mail/messages/:id/send. The draft is loaded with the resource engine (invisible →
 * 404), its From and Sender checked, the encryption policy applied; then an Outbox record is
 * written and either handed over now (synchronous: 200, 422, 502) or left to the send job (202).
 */
export async function sendDraft(ctx: Ctx, deps: SendDeps, decls: SendDecls, uid: string, body: SendBody): Promise<SendAnswer> {
  const msg = await loadDraft(ctx, decls, uid);
  const timing = timingOf(msg, body);
  const jobs = ctx.store.repo<OutboundJob>(OutboundJobModel);
  const jobUid = jobUidOf(msg.uid);
  const previous = await jobs.get(jobUid);
  if (previous && previous.state !== 'failed') throw new ApiError('api-120', `this message is already being sent (${previous.state})`);

  const draft = await readDraft(ctx, decls.mailboxes, msg);
  const resolved = await resolveRecipients(ctx, draft.rcpts);
  await applyEncryptionPolicy(ctx, msg, resolved, draft.rcpts);
  const routes = routeRecipients(resolved);

  const outgoing = await prepareOutgoing(ctx, deps, draft, timing.background);
  const owner = `api:${ctx.requestId || process.pid}:${jobUid}`;
  const leaseMs = ctx.config.get('mail:jobs:send:lease_seconds') * 1000;
  const fields = outboundJob(msg, draft, routes, outgoing, timing.background, dueAt(timing, leaseMs));
  if (previous) await jobs.delete(previous.uid);
  const job: Job = await jobs.create({ uid: jobUid, ...fields });

  if (timing.background) return queueInBackground(ctx, deps, msg, body, job, timing);
  return sendNow(ctx, deps, jobs, job, owner, leaseMs);
}
