// What the message routes beyond the generic ones do: move, copy, Deleted Items, empty a folder,
// read the body and open one attachment. Service functions: the routes in message-routes.ts call them.
import type { Readable } from 'node:stream';
import type { AttachmentStream } from 'mailparser';
import { ApiError, notFound } from '../errors/index.js';
import { checkRecord, type ResourceService } from '../resources/index.js';
import type { Ctx } from '../context/index.js';
import { addBlobRefs } from '../storage/index.js';
import { blobsOf, countIn, folderOf, freeRaw, publishFolder, publishMessage, type MessageRecord } from './filing.js';
import { FolderModel, type Folder } from './folders.js';
import { MailboxModel, onSenderList } from './mailboxes.js';
import { moveMessage, unfile } from './messages-resource.js';
import { displayBody } from './display-body.js';
import { MessageModel, parseMessage, type Message } from './messages.js';
import { sanitizeMailHtml } from '../scan/index.js';
import { inlineCidImages } from './inline-images.js';
import { safeFilename, withSafeNames } from './attachment-names.js';
import { searchDocument } from './search.js';
import { mailparser } from './mime-parser.js';
import { threadsGained } from './threads.js';

const EMPTY_BATCH = 500;

type FolderRecord = Folder & { uid: string };

/**
 * The text and sanitized HTML of a message already loaded (and its access checked) — `inlineImages`:
 * the pictures it carries written into it, for the web app's frame; an encrypted message only says
 * so (the server never sees its content).
 */
export async function bodyOf(ctx: Ctx, msg: MessageRecord, opts: { inlineImages?: boolean } = {}) {
  if (msg.smime === 'encrypted') return { encrypted: true, text: null, html: null };
  const parsed = await parseMessage(await blobsOf(ctx).get(msg.blobId));
  const html = parsed.html === null ? null : sanitizeMailHtml(parsed.html);
  const shown = html && opts.inlineImages ? inlineCidImages(html, parsed.mail.attachments) : html;
  return { encrypted: false, text: parsed.text, html: shown };
}

/** Whether the message's sender was verified at delivery and is on its mailbox's Safe Senders (its remote images may load). */
export async function isSafeSender(
  ctx: Pick<Ctx, 'store'>,
  msg: Pick<MessageRecord, 'senderVerified' | 'mailboxUid' | 'fromAddress'>,
): Promise<boolean> {
  if (!msg.senderVerified) return false;
  const box = await ctx.store.repo<{ safeSenders: string[] }>(MailboxModel).get(msg.mailboxUid);
  return Boolean(box && onSenderList(box.safeSenders, msg.fromAddress.toLowerCase()));
}

/** Message actions for one resource service (the registry's messages and folders, access checked through it). */
export function messageActions(service: ResourceService) {
  const messages = () => service.registry.get('messages');
  const folders = () => service.registry.get('folders');
  /** A message as every route answers it: hidden fields dropped, safe attachment names added. */
  const shown = (m: object) => service.view(messages(), m as never) as Record<string, unknown>;
  const load = async (ctx: Ctx, uid: string, right: 'read' | 'write' = 'read') =>
    (await service.load(ctx, messages(), uid, right)) as unknown as MessageRecord;

  /** The target folder must be in the same mailbox and open to the caller for new items. */
  async function target(ctx: Ctx, msg: MessageRecord, folderUid: string): Promise<FolderRecord> {
    const f = (await service.load(ctx, folders(), folderUid, 'read')) as unknown as FolderRecord;
    if (f.mailboxUid !== msg.mailboxUid) throw new ApiError('api-106', 'messages move and copy only between folders of the same mailbox');
    await checkRecord(ctx, folders(), f as never, 'create');
    return f;
  }

  return {
    load,
    shown,

    async move(ctx: Ctx, uid: string, folderUid: string, version?: number) {
      const msg = await load(ctx, uid, 'write');
      return shown(await moveMessage(ctx, msg, await target(ctx, msg, folderUid), version));
    },

    /** A copy shares the raw source (one more blob reference) and is searchable like the original. */
    async copy(ctx: Ctx, uid: string, folderUid: string) {
      const msg = await load(ctx, uid);
      const f = await target(ctx, msg, folderUid);
      const { uid: _u, version: _v, createdAt: _c, updatedAt: _up, ...fields } = msg;
      // The search document comes from the stored source; ciphertext has none.
      const doc =
        msg.smime === 'encrypted'
          ? searchDocument({ fields: msg, text: '' })
          : searchDocument(await parseMessage(await blobsOf(ctx).get(msg.blobId)));
      const { copy, folder } = await ctx.store.transaction(async (tx) => {
        const c = await tx.repo<Message>(MessageModel).create({ ...(withSafeNames(fields) as Message), folderUid: f.uid, ingestKey: null });
        await tx.repo<Message>(MessageModel).setText(c.uid, doc);
        await threadsGained(tx, [c]);
        await tx.repo(MailboxModel).increment(msg.mailboxUid, { usedBytes: msg.size });
        await addBlobRefs(tx, [{ blobId: msg.blobId, sha256: msg.blobId, size: msg.size }]);
        return { copy: c, folder: await countIn(tx, f.uid, 1, msg.seen ? 0 : 1) };
      });
      publishMessage(ctx, 'create', copy);
      publishFolder(ctx, folder);
      return shown(copy);
    },

    /** Deleted Items semantics: elsewhere the message moves there (the moved message); there it is removed for good (null). */
    async trash(ctx: Ctx, uid: string) {
      const msg = await load(ctx, uid, 'write');
      const trash = await folderOf(ctx.store, msg.mailboxUid, { folderRole: 'trash' });
      if (msg.folderUid !== trash.uid) return shown(await moveMessage(ctx, msg, await target(ctx, msg, trash.uid)));
      await service.remove(ctx, messages(), msg.uid, msg.version);
      return null;
    },

    /** Removes every message of a folder, a batch per transaction; blobs no message refers to any more are deleted. */
    async emptyFolder(ctx: Ctx, folderUid: string) {
      const folder = (await service.load(ctx, folders(), folderUid, 'write')) as unknown as FolderRecord;
      await service.load(ctx, folders(), folder.uid, 'delete');
      let removed = 0;
      for (;;) {
        const batch = await ctx.store.repo<Message>(MessageModel).list({ filter: { folderUid: folder.uid }, limit: EMPTY_BATCH });
        if (!batch.length) break;
        const freed: string[] = [];
        await ctx.store.transaction(async (tx) => {
          for (const m of batch) {
            if (await tx.repo(MessageModel).delete(m.uid)) {
              await unfile(tx, m as never);
              removed += 1;
              freed.push(m.blobId);
            }
          }
        });
        await freeRaw(ctx, freed);
      }
      const after = await ctx.store.repo<Folder>(FolderModel).get(folder.uid);
      publishFolder(ctx, after);
      return { removed, folder: after as unknown as Record<string, unknown> };
    },

    /** The body of a message the caller can read (bodyOf). */
    async body(ctx: Ctx, uid: string, opts: { inlineImages?: boolean } = {}) {
      return bodyOf(ctx, await load(ctx, uid), opts);
    },

    /**
     * The bodies of several messages of one folder the caller can read (one access check), as `body`
     * answers each; `want` 'html': an HTML message's text is not made (its text part, if any, is kept).
     * Messages not in the folder are left out.
     */
    async bodies(
      ctx: Ctx,
      folderUid: string,
      uids: string[],
      want: 'text' | 'html',
    ): Promise<Map<string, { encrypted: boolean; text: string | null; html: string | null }>> {
      await service.load(ctx, folders(), folderUid, 'read');
      const out = new Map<string, { encrypted: boolean; text: string | null; html: string | null }>();
      if (!uids.length) return out;
      const rows = await ctx.store
        .repo<MessageRecord>(MessageModel)
        .list({ filter: { folderUid, uid: { $in: uids } }, limit: uids.length });
      for (const m of rows) {
        if (m.smime === 'encrypted') out.set(m.uid, { encrypted: true, text: null, html: null });
        else {
          const b = await displayBody(await blobsOf(ctx).get(m.blobId), want);
          out.set(m.uid, { encrypted: false, text: b.text, html: b.html === null ? null : sanitizeMailHtml(b.html) });
        }
      }
      return out;
    },
  };
}

export type MessageActions = ReturnType<typeof messageActions>;

/**
 * One attachment of a stored message, read out of the raw source as a stream; the parts before it are
 * drained unread. Resolves when the attachment starts; 404 api-107 when the source has no such part.
 */
export async function openAttachment(
  ctx: Ctx,
  msg: MessageRecord,
  attachmentId: string,
): Promise<{ filename: string; contentType: string; content: Readable }> {
  const want = msg.attachments.find((a) => a.id === attachmentId);
  if (!want) throw notFound('No such attachment');
  const { MailParser } = await mailparser();
  return new Promise((resolve, reject) => {
    const parser = new MailParser({ skipImageLinks: true, skipTextToHtml: true, skipHtmlToText: true });
    let n = 0;
    let found = false;
    parser.on('data', (part: { type: string } & Partial<AttachmentStream>) => {
      if (part.type !== 'attachment') return;
      n += 1;
      const a = part as AttachmentStream;
      a.content.on('end', () => a.release?.());
      if (String(n) !== want.id || found) return void a.content.resume();
      found = true;
      resolve({
        filename: safeFilename(want.filename, `attachment-${want.id}`),
        contentType: want.contentType || 'application/octet-stream',
        content: a.content,
      });
    });
    parser.on('end', () => {
      if (!found) reject(notFound('No such attachment'));
    });
    parser.on('error', reject);
    blobsOf(ctx).stream(msg.blobId).on('error', reject).pipe(parser);
  });
}
