import { readAutoReply, writeAutoReply } from '../ingest/index.js';
import { messageActions, MessageModel, openAttachment, type MessageRecord } from '../mail/index.js';
import type { ResourceService } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import type { CallerApi, Row } from './types.js';

/** Messages read per query while listing a whole folder's change keys. */
const KEYS_PAGE = 2000;

type ItemApi = Pick<
  CallerApi,
  | 'folderItems'
  | 'folderKeys'
  | 'messageBody'
  | 'messageBodies'
  | 'setFlags'
  | 'moveMessage'
  | 'trashMessage'
  | 'deleteMessage'
  | 'attachment'
  | 'emptyFolder'
  | 'autoReply'
  | 'setAutoReply'
>;

/**
 * What a sync protocol reads and writes of messages, for one caller (ctx: trusted roles stripped):
 * folders walked in uid order and their change keys, bodies, read and flag, moves and deletes —
 * each checked by the resource engine exactly as the HTTP API checks it.
 */
export function itemApi(ctx: Ctx, service: ResourceService): ItemApi {
  const decl = (name: 'folders' | 'messages') => service.registry.get(name);
  const actions = messageActions(service);
  return {
    async folderItems(folderUid, opts) {
      await service.load(ctx, decl('folders'), folderUid, 'read');
      const rows = await ctx.store.repo<MessageRecord>(MessageModel).list({
        filter: {
          folderUid,
          ...(opts.after ? { uid: { $gt: opts.after } } : {}),
          ...(opts.before ? { uid: { $lt: opts.before } } : {}),
          ...(opts.uids ? { uid: { $in: opts.uids } } : {}),
          ...(opts.since ? { date: { $gte: opts.since } } : {}),
        },
        sort: [{ field: 'uid', dir: opts.newestFirst ? 'desc' : 'asc' }],
        limit: Math.min(Math.max(1, opts.limit), 1000),
      });
      return rows.map((r) => service.view(decl('messages'), r as never) as Row);
    },
    async folderKeys(folderUid, since) {
      await service.load(ctx, decl('folders'), folderUid, 'read');
      const out = new Map<string, string>();
      for (let after = ''; ;) {
        const page = await ctx.store.repo<MessageRecord>(MessageModel).list({
          filter: { folderUid, ...(after ? { uid: { $gt: after } } : {}), ...(since ? { date: { $gte: since } } : {}) },
          sort: [{ field: 'uid', dir: 'asc' }],
          limit: KEYS_PAGE,
        });
        for (const m of page) out.set(m.uid, String(m.version));
        if (page.length < KEYS_PAGE) return out;
        after = page[page.length - 1].uid;
      }
    },
    async setFlags(uid, flags) {
      const msg = (await service.load(ctx, decl('messages'), uid, 'write')) as unknown as MessageRecord;
      const patch: Record<string, unknown> = {};
      for (const k of ['seen', 'flagged', 'answered', 'forwarded'] as const)
        if (flags[k] !== undefined && flags[k] !== msg[k]) patch[k] = flags[k];
      if (!Object.keys(patch).length) return service.view(decl('messages'), msg as never) as Row;
      return service.update(ctx, decl('messages'), uid, { ...patch, version: msg.version });
    },
    messageBody: (uid) => actions.body(ctx, uid),
    messageBodies: (folderUid, uids, want) => actions.bodies(ctx, folderUid, uids, want),
    moveMessage: (uid, folderUid) => actions.move(ctx, uid, folderUid),
    trashMessage: (uid) => actions.trash(ctx, uid),
    async deleteMessage(uid) {
      const msg = (await service.load(ctx, decl('messages'), uid, 'delete')) as unknown as MessageRecord;
      await service.remove(ctx, decl('messages'), uid, msg.version);
    },
    async attachment(messageUid, attachmentId) {
      const msg = (await service.load(ctx, decl('messages'), messageUid, 'read')) as unknown as MessageRecord;
      const a = await openAttachment(ctx, msg, attachmentId);
      const chunks: Buffer[] = [];
      for await (const c of a.content) chunks.push(c as Buffer);
      return { filename: a.filename, contentType: a.contentType, data: Buffer.concat(chunks) };
    },
    async emptyFolder(folderUid) {
      const r = await actions.emptyFolder(ctx, folderUid);
      return { removed: r.removed };
    },
    autoReply: (mailboxUid) => readAutoReply(ctx, service, mailboxUid),
    setAutoReply: (mailboxUid, patch) => writeAutoReply(ctx, service, mailboxUid, patch),
  };
}
