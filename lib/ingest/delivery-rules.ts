import { createHash } from 'node:crypto';
import type { ParsedMail } from 'mailparser';
import { isApiError } from '../errors/index.js';
import { FocusedOverrideModel, onSenderList } from '../mail/index.js';
import type { Deps } from '../context/index.js';
import { bareAddress, headerValue, type HeaderBlock } from './headers.js';
import { overrideKeys, type RoundReads } from './round-reads.js';
import { AutoReplyModel, AutoReplySentModel, ControlMessageModel, CorrespondentModel, InvitationModel, type AutoReply } from './models.js';
import type { OutboundHook } from '../mail/index.js';
import { systemMessage } from './outbound.js';
import { applyItip, calendarPartsOf, type InboundItip } from '../pim/index.js';

const sha = (s: string) => createHash('sha256').update(s).digest('hex');

/** Spec rule 1: blocked and safe senders change deliver versus junk only; Safe Senders need a verified sender. */
export function senderListVerdict(
  box: { blockedSenders: string[]; safeSenders: string[] },
  sender: string,
  verified: boolean,
  junk: boolean,
): boolean {
  if (onSenderList(box.blockedSenders, sender)) return true;
  if (verified && onSenderList(box.safeSenders, sender)) return false;
  return junk;
}

/** Mail a person did not write: never answered by out-of-office, classified Other. */
export function isAutomated(h: HeaderBlock, envelopeFrom: string): boolean {
  const auto = headerValue(h, 'auto-submitted').toLowerCase();
  if (auto && auto !== 'no') return true;
  if (/^(bulk|junk|list|auto_reply)$/i.test(headerValue(h, 'precedence'))) return true;
  if (headerValue(h, 'list-id') || headerValue(h, 'list-unsubscribe') || headerValue(h, 'x-auto-response-suppress')) return true;
  if (!envelopeFrom) return true; // null sender: bounces and notifications
  return /^(mailer-daemon|postmaster|no-?reply|do-?not-?reply|bounces?)([+-]|@)/i.test(envelopeFrom);
}

export type ControlKind = 'recall' | 'read-receipt' | 'acme-challenge';

/** Spec rule 2: recognise recalls, read receipts for our own messages and ACME challenges (verified senders only). */
/** An RFC 8098 read receipt's envelope: multipart/report with report-type=disposition-notification. */
export function isDispositionReport(h: HeaderBlock): boolean {
  const ct = headerValue(h, 'content-type').toLowerCase();
  return ct.startsWith('multipart/report') && /report-type\s*=\s*"?disposition-notification/.test(ct);
}

export function controlKindOf(
  h: HeaderBlock,
  verified: boolean,
  ourDomains: ReadonlySet<string>,
): { kind: ControlKind; data: Record<string, unknown> } | null {
  if (!verified) return null;
  const subject = headerValue(h, 'subject');
  // RFC 8823: the challenge's Subject is "ACME: <token-part1>".
  if (/^ACME:\s*\S+/.test(subject))
    return {
      kind: 'acme-challenge',
      data: { token1: subject.replace(/^ACME:\s*/, '').trim(), messageId: headerValue(h, 'message-id') || null },
    };
  const recall = headerValue(h, 'x-svcmail-recall');
  if (recall) return { kind: 'recall', data: { messageId: recall } };
  if (isDispositionReport(h)) {
    const ref = headerValue(h, 'in-reply-to') || headerValue(h, 'references');
    const m = /@([^>\s]+)>/.exec(ref);
    if (m && ourDomains.has(m[1].toLowerCase())) return { kind: 'read-receipt', data: { messageId: ref } };
  }
  return null;
}

/**
 * Spec: delivery rule 2 — control messages (recall, read receipts, ACME challenges) are consumed, not
 * filed. The handlers come from outside lib/ingest (lib/send sendControlHooks), so ingest does not
 * depend on the send side. Consumed control messages are recorded.
 * A hook answers false when the message is no control message after all (an ACME challenge with no
 * open request): it is then filed like any other mail.
 */
export interface ControlHooks {
  handle?(
    deps: Deps,
    msg: { kind: ControlKind; mailboxUid: string; sender: string; data: Record<string, unknown>; rawRef: string },
  ): Promise<boolean | void>;
}

/** True when the message was consumed (not to be filed). An ACME challenge needs a hook that takes it. */
export async function consumeControl(
  deps: Deps,
  hooks: ControlHooks,
  entryUid: string,
  msg: { kind: ControlKind; mailboxUid: string; sender: string; data: Record<string, unknown>; rawRef: string },
): Promise<boolean> {
  const repo = deps.store.repo<Record<string, unknown>>(ControlMessageModel);
  try {
    await repo.create({ uid: entryUid, ...msg, handled: false });
  } catch (e) {
    if (!(isApiError(e) && e.code === 'api-112')) throw e;
  }
  const taken = await hooks.handle?.(deps, msg);
  if (taken === false || (taken === undefined && msg.kind === 'acme-challenge')) {
    await repo.delete(entryUid);
    return false;
  }
  return true;
}

/**
 * Spec rule 5: Focused/Other. The mailbox's focused-inbox-overrides come first (the sender's address,
 * then @domain and its parent domains), then known correspondents (Focused), then the heuristic:
 * automated and bulk mail is Other.
 */
export async function classifyFocused(
  deps: Deps,
  mailboxUid: string,
  sender: string,
  automated: boolean,
  reads?: RoundReads,
): Promise<boolean> {
  if (sender) {
    const keys = overrideKeys(sender);
    const overrides = reads
      ? reads.overrides(mailboxUid)
      : await deps.store
          .repo<{ sender: string; classification: 'focused' | 'other' }>(FocusedOverrideModel)
          .list({ filter: { mailboxUid, sender: { $in: keys } }, limit: keys.length });
    const best = keys.map((k) => overrides.find((o) => o.sender === k)).find(Boolean);
    if (best) return best.classification === 'focused';
  }
  if (
    sender &&
    (reads
      ? reads.isCorrespondent(mailboxUid, sender)
      : await deps.store.repo<Record<string, unknown>>(CorrespondentModel).findOne({ mailboxUid, address: sender }))
  )
    return true;
  return !automated;
}

/** Spec rule 6: out-of-office at most one per sender per day, never to automated mail. */
export async function maybeAutoReply(
  deps: Deps,
  outbound: OutboundHook,
  opts: { mailboxUid: string; mailboxAddress: string; sender: string; automated: boolean; subject: string; now?: Date },
  reads?: RoundReads,
): Promise<boolean> {
  if (opts.automated || !opts.sender || opts.sender === opts.mailboxAddress) return false;
  const ar = reads
    ? reads.autoReply(opts.mailboxUid)
    : await deps.store.repo<AutoReply>(AutoReplyModel).findOne({ mailboxUid: opts.mailboxUid });
  const now = opts.now ?? new Date();
  if (!ar?.enabled || (ar.startsAt && now < ar.startsAt) || (ar.endsAt && now > ar.endsAt)) return false;
  const day = now.toISOString().slice(0, 10);
  try {
    await deps.store
      .repo<Record<string, unknown>>(AutoReplySentModel)
      .create({ uid: sha(`${opts.mailboxUid}\0${opts.sender}\0${day}`), mailboxUid: opts.mailboxUid, sender: opts.sender, day });
  } catch (e) {
    if (isApiError(e) && e.code === 'api-112') return false; // already answered today
    throw e;
  }
  await outbound.send({
    kind: 'auto-reply',
    envelopeFrom: '',
    envelopeTo: [opts.sender],
    raw: systemMessage({
      from: opts.mailboxAddress,
      to: opts.sender,
      subject: `${ar.subject}: ${opts.subject}`.slice(0, 900),
      body: ar.body,
      headers: { 'Auto-Submitted': 'auto-replied', 'X-Auto-Response-Suppress': 'All' },
    }),
  });
  return true;
}

/**
 * Spec rule 6: meeting invitation processing. Each calendar part updates the recipient's calendar
 * (lib/pim/invitations) and is recorded once per entry with its outcome; a re-run after a crash
 * skips parts already recorded.
 */
export async function processInvitations(
  deps: Deps,
  entryUid: string,
  msg: InboundItip,
  messageUid: string | null,
  parsed: ParsedMail,
): Promise<number> {
  const repo = deps.store.repo<Record<string, unknown>>(InvitationModel);
  let n = 0;
  for (const [i, ics] of calendarPartsOf(parsed).entries()) {
    const uid = sha(`${entryUid}\0${i}`);
    if (await repo.get(uid)) continue;
    const r = await applyItip(deps, msg, ics);
    if (!r.applied)
      deps.log.info({ entry: entryUid, method: r.method, icalUid: r.icalUid, outcome: r.outcome }, 'meeting invitation not applied');
    try {
      await repo.create({
        uid,
        mailboxUid: msg.mailboxUid,
        messageUid,
        method: r.method,
        icalUid: r.icalUid,
        organizer: r.organizer,
        ics,
        processed: r.applied,
        outcome: r.outcome,
        eventUids: r.eventUids,
      });
      n += r.applied ? 1 : 0;
    } catch (e) {
      if (!(isApiError(e) && e.code === 'api-112')) throw e;
    }
  }
  return n;
}

/** The uid of a mailbox's correspondent record: derived, so each pair has one record. */
export const correspondentUid = (mailboxUid: string, address: string): string => sha(`${mailboxUid}\0${address}`);

/**
 * Spec rule 6, known correspondents recorded (one record per mailbox and address): counts
 * messages from correspondents, each (mailbox, address) record made, or its count raised,
 * all in one statement (PostgreSQL; SQLite one transaction). Several of one pair add up.
 */
export async function recordCorrespondents(
  deps: Pick<Deps, 'store'>,
  seen: Array<{ mailboxUid: string; address: string; messages?: number }>,
): Promise<void> {
  const known = seen.filter((c) => c.address);
  if (!known.length) return;
  const now = new Date();
  await deps.store.repo<{ mailboxUid: string; address: string; messages: number; lastAt: Date }>(CorrespondentModel).createOrAddMany(
    known.map((c) => ({
      uid: correspondentUid(c.mailboxUid, c.address),
      mailboxUid: c.mailboxUid,
      address: c.address,
      messages: c.messages ?? 1,
      lastAt: now,
    })),
    ['messages'],
  );
}

export function recordCorrespondent(deps: Pick<Deps, 'store'>, mailboxUid: string, address: string, messages = 1): Promise<void> {
  return recordCorrespondents(deps, [{ mailboxUid, address, messages }]);
}

export const senderOf = (h: HeaderBlock, envelopeFrom: string): string => bareAddress(headerValue(h, 'from')) || envelopeFrom;
