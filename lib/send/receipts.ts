import { randomUUID } from 'node:crypto';
import MimeNode from 'nodemailer/lib/mime-node/index.js';
import { ApiError } from '../errors/index.js';
import { servedDomains } from '../ingest/index.js';
import { isFederatedDomain } from '../keys/index.js';
import {
  loadRaw,
  type Mailbox,
  MailboxModel,
  type Message,
  MessageModel,
  type MessageRecord,
  publishMessage,
  type ReadReceipt,
  ReadReceiptModel,
  receiptUid,
} from '../mail/index.js';
import type { ResourceDecl } from '../resources/index.js';
import type { Ctx, Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import type { SendDeps } from './dispatch.js';

// Read receipts (Spec: Properties that hold for records in general — receipt settings for internal,
// federated and external senders; Inbound message, delivery rule 2 — read receipts for messages
// this server sent are consumed): requested receipts are sent or not per the mailbox's receipt
// settings, and receipts for our own messages are consumed on arrival. RFC 8098 message disposition
// notifications, built by nodemailer's MimeNode, handed to the outbound path like every message the
// service originates (the send job DKIM-signs them).

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();
type Mode = 'automatic' | 'manual';

/** RFC 8098 §3: multipart/report; report-type=disposition-notification, "displayed". */
export async function buildReceipt(r: {
  box: Pick<Mailbox, 'address' | 'name'>;
  to: string;
  subject: string;
  messageId: string | null;
  mode: Mode;
  readAt: Date;
}): Promise<Buffer> {
  const domain = domainOf(r.box.address);
  const root = new MimeNode('multipart/report; report-type=disposition-notification');
  root.setHeader({
    From: r.box.name ? `"${r.box.name.replace(/[\\"\r\n]/g, '')}" <${r.box.address}>` : r.box.address,
    To: r.to,
    Subject: `Read: ${r.subject || '(no subject)'}`.slice(0, 900),
    'Message-ID': `<${randomUUID()}@${domain}>`,
    Date: new Date().toUTCString(),
    'Auto-Submitted': 'auto-replied',
    ...(r.messageId ? { 'In-Reply-To': r.messageId, References: r.messageId } : {}),
  });
  root
    .createChild('text/plain; charset=utf-8')
    .setContent(
      `The message "${r.subject || '(no subject)'}" sent to ${r.box.address} was displayed on ${r.readAt.toUTCString()}.\n\nThis is no guarantee that the message was read or understood.\n`,
    );
  root
    .createChild('message/disposition-notification')
    .setContent(
      [
        `Reporting-UA: ${domain}; svcmail`,
        `Final-Recipient: rfc822; ${r.box.address}`,
        ...(r.messageId ? [`Original-Message-ID: ${r.messageId}`] : []),
        `Disposition: ${r.mode === 'automatic' ? 'automatic-action/MDN-sent-automatically' : 'manual-action/MDN-sent-manually'}; displayed`,
        '',
      ].join('\r\n'),
    );
  return root.build();
}

/** Who asked: a mailbox here (internal), another server of this service (_svc TXT: federated), or anyone else. */
async function classOf(deps: Pick<Deps, 'config' | 'store' | 'log'>, address: string): Promise<'internal' | 'federated' | 'external'> {
  const domain = domainOf(address);
  if ((await servedDomains(deps)).has(domain)) return 'internal';
  return (await isFederatedDomain(deps, domain)) ? 'federated' : 'external';
}

async function decide(deps: SendDeps, rec: Row<ReadReceipt>): Promise<void> {
  const repo = deps.store.repo<ReadReceipt>(ReadReceiptModel);
  const box = await deps.store.repo<Mailbox>(MailboxModel).get(rec.mailboxUid);
  if (!box) {
    await repo.update(rec.uid, { state: 'declined' }, { expectedVersion: rec.version });
    return;
  }
  const policy = box.receiptSettings[await classOf(deps, rec.to)];
  if (policy === 'never') {
    await repo.update(rec.uid, { state: 'declined' }, { expectedVersion: rec.version });
    return;
  }
  if (rec.state === 'pending' && policy === 'ask') {
    await repo.update(rec.uid, { state: 'ask' }, { expectedVersion: rec.version });
    return;
  }
  const mode: Mode = rec.state === 'approved' ? 'manual' : 'automatic';
  const raw = await buildReceipt({ box, to: rec.to, subject: rec.subject, messageId: rec.messageId, mode, readAt: rec.readAt });
  // The hand-off id is the record's: a round that dies before the update below queues nothing twice.
  await deps.outbound.send({ id: rec.uid, kind: 'receipt', envelopeFrom: '', envelopeTo: [rec.to], raw });
  await repo.update(rec.uid, { state: 'sent', mode, sentAt: new Date() }, { expectedVersion: rec.version });
}

/** The send job's step: decides the receipts noted since the last round (and those the owner approved). */
export async function processReceipts(deps: SendDeps, limit: number): Promise<number> {
  const due = await deps.store
    .repo<ReadReceipt>(ReadReceiptModel)
    .list({ filter: { state: { $in: ['pending', 'approved'] } }, sort: [{ field: 'createdAt', dir: 'asc' }], limit });
  let n = 0;
  for (const rec of due) {
    try {
      await decide(deps, rec);
      n++;
    } catch (e) {
      // A version conflict (the owner answered meanwhile) or a failed hand-off: the next round decides again.
      deps.log.warn({ receipt: rec.uid, err: (e as Error).message }, 'read receipt not decided; retrying next round');
    }
  }
  return n;
}

/**
 * POST /api/mail/messages/:id/receipt — the owner's answer where the settings say ask (or before the
 * job decided): send (manual-action) or decline. At most one receipt per message.
 */
export async function answerReceipt(
  ctx: Ctx,
  decls: { messages: ResourceDecl; load(ctx: Ctx, d: ResourceDecl, uid: string, right: 'write'): Promise<Record<string, unknown>> },
  uid: string,
  send: boolean,
): Promise<{ uid: string; messageUid: string; to: string; state: ReadReceipt['state'] }> {
  const msg = (await decls.load(ctx, decls.messages, uid, 'write')) as unknown as MessageRecord;
  if (!msg.receiptTo) throw new ApiError('api-120', 'this message asks for no read receipt (or its sender is not verified)');
  if (!msg.seen) throw new ApiError('api-120', 'a read receipt is sent for a message that was read: mark it seen first');
  const repo = ctx.store.repo<ReadReceipt>(ReadReceiptModel);
  const id = receiptUid(msg.mailboxUid, msg.messageId, msg.uid);
  const rec = await repo.get(id);
  if (!rec) throw new ApiError('api-120', 'the receipt is not owed yet; retry in a moment');
  if (rec.state === 'sent' || rec.state === 'declined') throw new ApiError('api-120', `the read receipt was already ${rec.state}`);
  const next = await repo.update(rec.uid, { state: send ? 'approved' : 'declined' }, { expectedVersion: rec.version });
  return { uid: next.uid, messageUid: msg.uid, to: next.to, state: next.state };
}

/** Whether the inbound receipt is a disposition notification and what it says (RFC 8098 §3.2). */
function dispositionOf(raw: string): { originalMessageId: string | null; finalRecipient: string | null; disposition: string } {
  const field = (name: string) => new RegExp(`^${name}:[ \\t]*(.+)$`, 'im').exec(raw)?.[1]?.trim() ?? null;
  const final = field('Final-Recipient');
  return {
    originalMessageId: /<[^>\s]+>/.exec(field('Original-Message-ID') ?? '')?.[0] ?? null,
    finalRecipient: final ? final.replace(/^rfc822\s*;\s*/i, '').toLowerCase() : null,
    disposition: (field('Disposition') ?? 'displayed').slice(0, 200),
  };
}

/**
 * Delivery rule 2 for a receipt of our own message (consumed, never filed): it is recorded on the
 * mailbox's sent copy as `receipts` (who, what disposition, when), once per reporter.
 */
export async function recordReceipt(
  deps: Deps,
  msg: { mailboxUid: string; sender: string; data: Record<string, unknown>; rawRef: string },
): Promise<boolean> {
  const raw = (await loadRaw(deps, msg.rawRef)).toString('utf8');
  const d = dispositionOf(raw);
  const messageId = d.originalMessageId ?? /<[^>\s]+>/.exec(String(msg.data.messageId ?? ''))?.[0] ?? null;
  if (!messageId) return true;
  const repo = deps.store.repo<Message>(MessageModel);
  const copies = (await repo.list({ filter: { mailboxUid: msg.mailboxUid, messageId }, limit: 20 })).filter((m) => !m.draft);
  const from = d.finalRecipient ?? msg.sender;
  for (const m of copies) {
    if (m.receipts.some((r) => r.from === from)) continue;
    const updated = await repo.update(
      m.uid,
      { receipts: [...m.receipts, { from, disposition: d.disposition, at: new Date().toISOString() }] },
      { expectedVersion: m.version },
    );
    publishMessage(deps, 'update', updated);
  }
  return true;
}
