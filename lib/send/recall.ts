import { randomUUID } from 'node:crypto';
import { ApiError } from '../errors/index.js';
import { acceptHandoff, servedDomains, type ControlHooks } from '../ingest/index.js';
import { consumeAcmeChallenge } from '../keys/index.js';
import {
  AddressModel,
  FolderModel,
  MailboxModel,
  folderOf,
  MessageModel,
  unfile,
  type Folder,
  type Message,
  type MessageRecord,
} from '../mail/index.js';
import type { ResourceDecl } from '../resources/index.js';
import type { Ctx, Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import type { SendDeps } from './dispatch.js';
import { fileReport } from './dsn.js';
import { recordReceipt } from './receipts.js';

const domainOf = (a: string) => a.slice(a.lastIndexOf('@') + 1).toLowerCase();

/**
 * Spec: POST /api/mail/messages/:id/recall — for a message in Sent Items. The recall travels as a
 * control message (X-Svcmail-Recall: <Message-ID>) through the inbound path to each internal
 * recipient, where delivery rule 2 consumes it (verified senders only) and the hook below withdraws
 * the unread copy and reports to the sender. External recipients cannot be recalled.
 */
export async function recallMessage(
  ctx: Ctx,
  deps: SendDeps,
  decls: { messages: ResourceDecl; load(ctx: Ctx, d: ResourceDecl, uid: string, right: 'write'): Promise<Record<string, unknown>> },
  uid: string,
): Promise<{ recalled: string[]; notRecalled: string[]; messageId: string }> {
  const msg = (await decls.load(ctx, decls.messages, uid, 'write')) as unknown as MessageRecord;
  const sent = await folderOf(ctx.store, msg.mailboxUid, { folderRole: 'sent' });
  if (msg.folderUid !== sent.uid) throw new ApiError('api-120', 'only a message in Sent Items can be recalled');
  if (!msg.messageId || !msg.fromAddress) throw new ApiError('api-120', 'this message has no Message-ID or From to recall by');
  if (!ctx.config.get('mail:security:trusted_authserv_id').trim())
    throw new ApiError('api-120', 'recall needs mail:security:trusted_authserv_id (recalls are honoured from verified senders only)');
  const domains = await servedDomains(ctx);
  const rcpts = [...new Set([...msg.to, ...msg.cc, ...msg.bcc].map((a) => a.address.toLowerCase()))];
  const internal = rcpts.filter((r) => domains.has(domainOf(r)));
  if (internal.length) {
    const domain = domainOf(msg.fromAddress);
    const raw = Buffer.from(
      [
        `Authentication-Results: ${ctx.config.get('mail:security:trusted_authserv_id').trim()}; dmarc=pass header.from=${domain} (sent by this server)`,
        `From: ${msg.fromAddress}`,
        `To: ${internal.join(', ')}`,
        `Subject: Recall: ${msg.subject.replace(/[\r\n]+/g, ' ')}`.slice(0, 900),
        `Date: ${new Date().toUTCString()}`,
        `Message-ID: <${randomUUID()}@${domain}>`,
        `X-Svcmail-Recall: ${msg.messageId}`,
        'Auto-Submitted: auto-generated',
        'MIME-Version: 1.0',
        'Content-Type: text/plain; charset=utf-8',
        '',
        `${msg.fromAddress} would like to recall the message "${msg.subject}".`,
        '',
      ].join('\r\n'),
    );
    await acceptHandoff(deps, { raw, envelopeFrom: msg.fromAddress, recipients: internal, transactionId: `recall-${msg.uid}` });
  }
  return { recalled: internal, notRecalled: rcpts.filter((r) => !internal.includes(r)), messageId: msg.messageId };
}

async function withdraw(deps: Deps, mailboxUid: string, sender: string, messageId: string): Promise<'withdrawn' | 'read' | 'absent'> {
  const copies = await deps.store.repo<Message>(MessageModel).list({ filter: { mailboxUid, messageId, fromAddress: sender }, limit: 100 });
  if (!copies.length) return 'absent';
  const unread = copies.filter((c) => !c.seen);
  if (!unread.length) return 'read';
  for (const c of unread) {
    const gone = await deps.store.transaction(async (tx) => {
      if (!(await tx.repo(MessageModel).delete(c.uid))) return false;
      await unfile(tx, c as never);
      return true;
    });
    if (!gone) continue;
    deps.events.publish([c.folderUid], { type: 'message', action: 'delete', data: { uid: c.uid, folderUid: c.folderUid, mailboxUid } });
    const f = await deps.store.repo<Folder>(FolderModel).get(c.folderUid);
    if (f)
      deps.events.publish([f.uid], {
        type: 'folder',
        action: 'update',
        data: { uid: f.uid, mailboxUid: f.mailboxUid, unreadCount: f.unreadCount, totalCount: f.totalCount, version: f.version },
      });
  }
  return 'withdrawn';
}

/**
 * Delivery rule 2 hooks for the send side: recalls withdraw unread copies and report to the sender;
 * read receipts for our own messages are consumed (recorded by the inbound path, not filed); an ACME
 * challenge (Spec: Signing-certificate enrolment, step 2) is consumed only when it answers an open
 * request (else it is filed), and `onAcmeChallenge` wakes the driver job to send the reply.
 */
export function sendControlHooks(next?: ControlHooks, opts: { onAcmeChallenge?: () => void } = {}): ControlHooks {
  return {
    async handle(deps, msg) {
      if (msg.kind === 'acme-challenge') {
        const messageId = typeof msg.data.messageId === 'string' ? msg.data.messageId : null;
        // Only verified senders reach the hooks (delivery rule 2 checks it before recognising the kind).
        const taken = await consumeAcmeChallenge(deps, {
          mailboxUid: msg.mailboxUid,
          from: msg.sender,
          subject: `ACME: ${String(msg.data.token1 ?? '')}`,
          messageId,
          senderVerified: true,
        });
        if (taken) opts.onAcmeChallenge?.();
        return taken;
      }
      if (msg.kind === 'recall') {
        const messageId = String(msg.data.messageId ?? '');
        const outcome = await withdraw(deps, msg.mailboxUid, msg.sender, messageId);
        const origin = await deps.store.repo<{ mailboxUid: string }>(AddressModel).findOne({ address: msg.sender });
        const box: Row<{ address: string }> | null = await deps.store.repo<{ address: string }>(MailboxModel).get(msg.mailboxUid);
        if (origin && box) {
          await fileReport(deps, {
            mailboxUid: origin.mailboxUid,
            to: msg.sender,
            subject: `Recall ${outcome === 'withdrawn' ? 'succeeded' : 'failed'}`,
            messageId,
            originalHeaders: `Message-ID: ${messageId}\r\n`,
            key: `recall:${messageId}:${msg.mailboxUid}`,
            refused: [
              {
                rcpt: box.address,
                reason:
                  outcome === 'withdrawn'
                    ? 'the unread copy was withdrawn'
                    : outcome === 'read'
                      ? 'already read: not withdrawn'
                      : 'no copy found',
                permanent: true,
              },
            ],
            intro: 'Recall of your message:',
          });
        }
        return;
      }
      // Consumed (never filed) and recorded on the sent copy it answers.
      if (msg.kind === 'read-receipt') return recordReceipt(deps, msg);
      await next?.handle?.(deps, msg);
    },
  };
}
