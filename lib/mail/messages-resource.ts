import { defineResource, type AnyRecord } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { dropBlobRef, type Store } from '../storage/index.js';
import { countIn, freeRaw, publishFolder, publishMessage, type MessageRecord } from './filing.js';
import { FolderModel, type Folder } from './folders.js';
import { MailboxModel } from './mailboxes.js';
import { withSafeNames } from './attachment-names.js';
import { MessageModel, messageFields } from './messages.js';
import { noteReceiptOwed } from './receipts.js';
import { threadLost, threadSeenChanged, threadsGained, type ThreadMember } from './threads.js';

/** Fields a client changes on a message through the generic routes; moves and copies have their own routes. */
const CLIENT_FIELDS = new Set(['seen', 'flagged', 'answered', 'forwarded', 'labels', 'focused']);
const SERVER_FIELDS = Object.keys(messageFields).filter((k) => !CLIENT_FIELDS.has(k) && k !== 'mailboxUid' && k !== 'folderUid');

/** Removes a message's weight from its folder and mailbox; answers the folder after the change. */
export async function unfile(store: Store, msg: AnyRecord): Promise<void> {
  await countIn(store, msg.folderUid as string, -1, msg.seen ? 0 : -1);
  await threadLost(store, msg as unknown as ThreadMember);
  await store.repo(MailboxModel).increment(msg.mailboxUid as string, { usedBytes: -(msg.size as number) });
  await dropBlobRef(store, msg.blobId as string);
}

export const messagesResource = defineResource({
  group: 'mail',
  name: 'messages',
  entity: 'message',
  summary:
    'Messages: parsed headers, flags, labels, Focused/Other, S/MIME marker; the raw source is in the blob store. Delivery, compose and import create them; move and copy have their own routes',
  model: MessageModel,
  scope: 'mailbox',
  mailboxField: 'mailboxUid',
  parent: { resource: 'folders', field: 'folderUid' },
  defaultAcl: [],
  serverFields: SERVER_FIELDS,
  hiddenFields: ['ingestKey'],
  // Every answer and event carries each attachment's safe name beside the name as sent (records filed before it was stored too).
  view: (rec) => withSafeNames(rec as { attachments?: Array<{ id: string; filename: string }> }),
  operations: ['list', 'head', 'get', 'update', 'updateProperty', 'bulkUpdate', 'delete', 'bulkDelete'],
  eventChannels: (rec) => [rec.folderUid as string],
  hooks: {
    async afterUpdate(ctx, before, after) {
      if (before.seen === after.seen) return;
      await countIn(ctx.store, after.folderUid as string, 0, after.seen ? -1 : 1);
      await threadSeenChanged(ctx.store, after as unknown as ThreadMember, after.seen ? -1 : 1);
    },
    async afterDelete(ctx, rec) {
      await unfile(ctx.store, rec);
    },
    async afterCommit(ctx, action, before, after) {
      // Folder counters changed inside the transaction; their events go out only now that it committed.
      if (action === 'update' && before && after && before.seen !== after.seen) {
        publishFolder(ctx, await ctx.store.repo<Folder>(FolderModel).get(after.folderUid as string));
        // Read receipts: the owner read a message whose verified sender asked for one; the send job
        // decides with the mailbox's receipt settings (lib/send/receipts.ts).
        if (after.seen && after.receiptTo) await noteReceiptOwed(ctx, after);
      }
      if (action === 'delete' && before) {
        publishFolder(ctx, await ctx.store.repo<Folder>(FolderModel).get(before.folderUid as string));
        await freeRaw(ctx, [before.blobId as string]);
      }
    },
  },
});

/** Moves messages of one mailbox into a folder of the same mailbox, counters in the same transaction. */
export async function moveMessage(
  ctx: Ctx,
  msg: MessageRecord,
  target: Folder & { uid: string },
  expectedVersion?: number,
): Promise<MessageRecord> {
  if (msg.folderUid === target.uid) return msg;
  const { moved, from, to } = await ctx.store.transaction(async (tx) => {
    const m = await tx
      .repo<MessageRecord>(MessageModel)
      .update(msg.uid, { folderUid: target.uid }, { expectedVersion: expectedVersion ?? msg.version });
    const unread = msg.seen ? 0 : 1;
    const counts = { moved: m, from: await countIn(tx, msg.folderUid, -1, -unread), to: await countIn(tx, target.uid, 1, unread) };
    await threadLost(tx, msg);
    await threadsGained(tx, [m]);
    return counts;
  });
  ctx.events.publish([msg.folderUid], {
    type: 'message',
    action: 'delete',
    data: { uid: msg.uid, folderUid: msg.folderUid, mailboxUid: msg.mailboxUid },
  });
  publishMessage(ctx, 'create', moved);
  publishFolder(ctx, from);
  publishFolder(ctx, to);
  return moved;
}
