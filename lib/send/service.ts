import { z } from 'zod';
import { ApiError, invalid } from '../errors/index.js';
import { resolveRecipient, servedDomains, wakeWorkers } from '../ingest/index.js';
import { checkSendPolicy, classifyRecipients, readPolicy, refuseDowngrade } from '../keys/index.js';
import { loadRaw, type Message, MessageModel, type MessageRecord, parseMessage, publishMessage, storeRaw } from '../mail/index.js';
import type { ResourceDecl } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import { dkimSign } from './dkim.js';
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

/**
 * Spec: POST /api/mail/messages/:id/send. The draft is loaded with the resource engine (invisible →
 * 404), its From and Sender checked, the encryption policy applied; then an Outbox record is
 * written and either handed over now (synchronous: 200, 422, 502) or left to the send job (202).
 */
export async function sendDraft(
  ctx: Ctx,
  deps: SendDeps,
  decls: {
    messages: ResourceDecl;
    mailboxes: ResourceDecl;
    load(ctx: Ctx, d: ResourceDecl, uid: string, right: 'write'): Promise<Record<string, unknown>>;
  },
  uid: string,
  body: SendBody,
): Promise<SendAnswer> {
  let msg = (await decls.load(ctx, decls.messages, uid, 'write')) as unknown as MessageRecord;
  if (!msg.draft) throw new ApiError('api-120', 'only a draft can be sent');
  // Scheduled send (Spec: Outbound message, row 3): the time is the draft's sendAt (set through
  // compose); a sendAt in the request (older clients) is written to the draft too.
  const sendAt = body.sendAt ?? msg.sendAt ?? null;
  const scheduled = Boolean(sendAt && sendAt.getTime() > Date.now());
  const background = body.background || Boolean(sendAt);
  const jobs = ctx.store.repo<OutboundJob>(OutboundJobModel);
  const jobUid = jobUidOf(msg.uid);
  const previous = await jobs.get(jobUid);
  if (previous && previous.state !== 'failed') throw new ApiError('api-120', `this message is already being sent (${previous.state})`);

  const raw = await loadRaw(ctx, msg.blobId);
  const parsed = await parseMessage(raw);
  const from = parsed.fields.from?.address ?? '';
  if (!from) throw invalid('the draft has no From address', [{ path: 'from', message: 'missing' }]);
  const sender = bare(headerOf(raw, 'sender'));
  await permitAddresses(ctx, decls.mailboxes, [from, sender]);
  const rcpts = [...new Set([...parsed.fields.to, ...parsed.fields.cc, ...parsed.fields.bcc].map((a) => a.address.toLowerCase()))];
  if (!rcpts.length) throw invalid('the draft has no recipients', [{ path: 'to', message: 'empty' }]);

  const domains = await servedDomains(ctx);
  const resolved = await Promise.all(
    rcpts.map(async (address) => ({
      address,
      sameOrg: domains.has(domainOf(address)),
      res: domains.has(domainOf(address)) ? await resolveRecipient(ctx, address, domains) : null,
    })),
  );
  // Encryption policy (sameOrg / federated via _svc TXT / external; local key records or pinned keys)
  // and downgrade protection (lib/keys): refused with api-121 before anything is queued.
  const encrypted = msg.smime === 'encrypted';
  const classes = await classifyRecipients(
    ctx,
    msg.mailboxUid,
    resolved.map((r) => ({ address: r.address, sameOrg: r.sameOrg, localMailboxUid: r.res?.kind === 'mailbox' ? r.res.mailboxUid : null })),
  );
  checkSendPolicy(await readPolicy(ctx), classes, encrypted);
  await refuseDowngrade(ctx, msg.mailboxUid, rcpts, encrypted);

  const localRcpts: string[] = [];
  const pending: string[] = [];
  const refused: Refused[] = [];
  for (const r of resolved) {
    if (!r.sameOrg) pending.push(r.address);
    else if (r.res?.kind === 'unknown') refused.push({ rcpt: r.address, reason: 'no such recipient here', permanent: true });
    else localRcpts.push(r.address);
  }

  const out = outgoingRaw(raw, domainOf(from));
  if (!background) {
    const scan = await scanOutbound(deps, out.raw, from, rcpts);
    if (scan) throw new ApiError('api-114', `the message was refused by the outbound scan: ${scan}`);
  }
  const signed = (await dkimSign(ctx.config, out.raw, domainOf(from))).raw;
  const stored = await storeRaw(ctx, signed);
  const owner = `api:${ctx.requestId || process.pid}:${jobUid}`;
  const leaseMs = ctx.config.get('mail:jobs:send:lease_seconds') * 1000;
  // A synchronous send is due only after its lease: should this process die, the job takes it then.
  const due = background ? (scheduled ? sendAt! : new Date()) : new Date(Date.now() + leaseMs);
  const fields: OutboundJob = {
    kind: 'message',
    mailboxUid: msg.mailboxUid,
    messageUid: msg.uid,
    handoffUid: null,
    rawRef: stored.blobId,
    size: stored.size,
    messageId: out.messageId,
    subject: parsed.fields.subject,
    envelopeFrom: sender || from,
    localRcpts,
    localDone: false,
    pending,
    accepted: [],
    refused,
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
  if (previous) await jobs.delete(previous.uid);
  let job: Job = await jobs.create({ uid: jobUid, ...fields });

  if (background) {
    if (body.sendAt && msg.sendAt?.getTime() !== body.sendAt.getTime()) {
      msg = await ctx.store.repo<Message>(MessageModel).update(msg.uid, { sendAt: body.sendAt });
      publishMessage(ctx, 'update', msg);
    }
    // A scheduled draft stays a draft in Drafts until its time; the send job then moves it to the
    // Outbox and sends it like a background send (deleting or replacing the draft cancels it).
    if (scheduled) return { status: 202, body: { ...view(job), state: 'scheduled', sendAt } };
    await placeMessage(deps, job, 'outbox', false);
    wakeWorkers(ctx.config, 'send');
    return { status: 202, body: view(job) };
  }
  const [claimed] = await jobs.claim({ uid: jobUid }, { owner, leaseMs, limit: 1 });
  if (!claimed) throw new ApiError('api-120', 'this message is already being sent');
  try {
    job = await advance(deps, claimed, { sync: true });
    if (!job.accepted.length && !job.localRcpts.length) {
      // Spec: 502 when the transport accepts no recipient; the draft stays in Drafts.
      const reasons = [
        ...job.refused,
        ...job.pending.map((rcpt) => ({ rcpt, reason: job.lastError ?? 'temporary failure', permanent: false })),
      ];
      // A hand-off that may or may not have left stays held for review (settled and counted as such):
      // marking it failed would let a resend hand it over a second time (Spec: never sent twice).
      if (!job.review) {
        const counted = job.state === 'failed'; // settled as failed already (and counted there)
        job = await jobs.update(
          job.uid,
          { state: 'failed', pending: [], refused: reasons, finishedAt: new Date() },
          { expectedVersion: job.version },
        );
        if (!counted) await countEvent(ctx, 'svcmail_sends_total', { result: 'failed' });
      }
      throw new ApiError(
        'api-115',
        `no recipient was accepted: ${reasons
          .map((r) => `${r.rcpt}: ${r.reason}`)
          .join('; ')
          .slice(0, 1000)}`,
        { details: reasons.map((r) => ({ path: r.rcpt, message: r.reason })) },
      );
    }
    return { status: 200, body: view(job) };
  } finally {
    await jobs.release(jobUid, owner, job.state === 'queued' ? { nextAttemptAt: job.nextAttemptAt } : {}).catch(() => undefined);
  }
}
