import { ApiError } from '../errors/index.js';
// The module itself, not lib/ingest's face: lib/ingest imports lib/mail (crash.ts imports nothing).
import { crashPoint } from '../ingest/crash.js';
import type { Deps } from '../resources/index.js';
import { addBlobRef, BlobStore, type Row, type StoredBlob, type Store } from '../storage/index.js';
import { FolderModel, type Folder, type FolderRole } from './folders.js';
import { MailboxModel, type Mailbox } from './mailboxes.js';
import { MessageModel, type Message, type ParsedMessage } from './messages.js';
import { searchDocument } from './search.js';

export type StoredRaw = StoredBlob;
export type MessageRecord = Row<Message>;

const blobStores = new WeakMap<object, BlobStore>();
export function blobsOf(deps: Pick<Deps, 'config'>): BlobStore {
  let b = blobStores.get(deps.config);
  if (!b) blobStores.set(deps.config, (b = new BlobStore(deps.config)));
  return b;
}

/** The raw message into the blob store, once per content (idempotent by sha256). */
export function storeRaw(deps: Pick<Deps, 'config'>, raw: Buffer): Promise<StoredRaw> {
  return blobsOf(deps).put(raw);
}

export function loadRaw(deps: Pick<Deps, 'config'>, blobId: string): Promise<Buffer> {
  return blobsOf(deps).get(blobId);
}

export interface FileRequest {
  mailboxUid: string;
  folderUid?: string;
  folderRole?: FolderRole;
  raw: StoredRaw;
  parsed: ParsedMessage;
  /** searchDocument(parsed), when the caller has it already (delivery works it out once per message). */
  document?: string;
  flags?: Partial<Pick<Message, 'seen' | 'flagged' | 'answered' | 'forwarded' | 'draft'>>;
  labels?: string[];
  focused?: 'focused' | 'other' | null;
  /** Delivery: the verified sender's receipt address; compose: the scheduled send time. */
  receiptTo?: string | null;
  sendAt?: Date | null;
  /** A repeated key for the same mailbox returns the copy filed the first time. */
  idempotencyKey?: string;
  /**
   * Given: the copy's full-text document is handed to this (also for a copy filed the first time)
   * instead of written in the filing transaction, and the caller writes it in a later commit of its
   * own (the scan round's closing one: one full-text flush per round instead of one per copy).
   */
  deferText?: (messageUid: string, document: string) => void;
  /**
   * Given: the caller makes the filing durable with a commit of its own afterwards (a scan round
   * releasing its entries), so the copy is filed with an asynchronous commit (Store.transaction
   * syncCommit false) and its events are handed to publish(), to be sent once that commit is done
   * (no client hears of a copy a database crash could still take back).
   */
  durableLater?: { publish(send: () => void): void };
}

export async function folderOf(store: Store, mailboxUid: string, ref: { folderUid?: string; folderRole?: FolderRole }): Promise<Row<Folder>> {
  const repo = store.repo<Folder>(FolderModel);
  const f = ref.folderUid ? await repo.get(ref.folderUid) : await repo.findOne({ mailboxUid, role: ref.folderRole ?? 'inbox' });
  if (!f || f.mailboxUid !== mailboxUid) throw new ApiError('api-107', 'No such folder in this mailbox');
  return f;
}

/** Counter changes of a folder when messages enter (+1) or leave (-1) it. */
export async function countIn(store: Store, folderUid: string, total: number, unread: number): Promise<Row<Folder> | null> {
  if (!total && !unread) return null;
  return store.repo<Folder>(FolderModel).increment(folderUid, { totalCount: total, unreadCount: unread });
}

export function publishFolder(deps: Pick<Deps, 'events'>, folder: Row<Folder> | null): void {
  if (!folder) return;
  // Spec: Events 7 — folder update events carry uid, mailboxUid, unreadCount, totalCount.
  deps.events.publish([folder.uid], { type: 'folder', action: 'update', data: { uid: folder.uid, mailboxUid: folder.mailboxUid, unreadCount: folder.unreadCount, totalCount: folder.totalCount, version: folder.version } });
}

export function publishMessage(deps: Pick<Deps, 'events'>, action: 'create' | 'update' | 'delete', msg: MessageRecord): void {
  deps.events.publish([msg.folderUid], { type: 'message', action, data: { ...msg } });
}

/** Files one copy: message row, folder counts, mailbox usage and blob reference commit together. */
export async function fileMessage(deps: Deps, req: FileRequest): Promise<MessageRecord> {
  let filed: MessageRecord;
  try {
    filed = await fileOnce(deps, req);
  } catch (e) {
    // Two deliveries of the same key at once: the unique (mailboxUid, ingestKey) lets one win; the other answers its copy.
    if (!(e instanceof ApiError && e.code === 'api-112' && req.idempotencyKey)) throw e;
    const existing = await deps.store.repo<Message>(MessageModel).findOne({ mailboxUid: req.mailboxUid, ingestKey: req.idempotencyKey });
    if (!existing) throw e;
    filed = existing;
  }
  // A copy filed the first time by a run whose deferred document was never written (it crashed first) gets it now.
  req.deferText?.(filed.uid, req.document ?? searchDocument(req.parsed));
  return filed;
}

async function fileOnce(deps: Deps, req: FileRequest): Promise<MessageRecord> {
  const { message, folder } = await deps.store.transaction(async (tx) => {
    const messages = tx.repo<Message>(MessageModel);
    // A key filed before: the unique (mailboxUid, ingestKey) refuses the row (api-112), the transaction
    // is undone and fileMessage answers the copy filed the first time (no read first for the rare retry).
    const flags = { seen: false, flagged: false, answered: false, forwarded: false, draft: false, ...req.flags };
    // The folder is found and its counts raised in one statement (the one folderOf would answer).
    const f = await tx.repo<Folder>(FolderModel).increment(req.folderUid ? { uid: req.folderUid, mailboxUid: req.mailboxUid } : { mailboxUid: req.mailboxUid, role: req.folderRole ?? 'inbox' }, { totalCount: 1, unreadCount: flags.seen ? 0 : 1 });
    if (!f) throw new ApiError('api-107', 'No such folder in this mailbox');
    const created = await messages.create({
      ...req.parsed.fields, ...flags, mailboxUid: req.mailboxUid, folderUid: f.uid, blobId: req.raw.blobId, size: req.raw.size,
      labels: req.labels ?? [], focused: req.focused ?? null, ingestKey: req.idempotencyKey ?? null, receiptTo: req.receiptTo ?? null, receipts: [], sendAt: req.sendAt ?? null,
    });
    if (!req.deferText) await messages.setText(created.uid, req.document ?? searchDocument(req.parsed));
    crashPoint('ingest.mid-filing'); // the message row and folder counts written, the mailbox usage not yet: the transaction must undo it
    await tx.repo<Mailbox>(MailboxModel).increment(req.mailboxUid, { usedBytes: req.raw.size });
    await addBlobRef(tx, req.raw);
    return { message: created, folder: f };
  }, { syncCommit: !req.durableLater });
  const publish = () => {
    publishMessage(deps, 'create', message);
    publishFolder(deps, folder);
  };
  if (req.durableLater) req.durableLater.publish(publish);
  else publish();
  return message;
}

/** Spec: Per-mailbox delivery rules 4 — would this size take this mailbox record over its quota (0 = none)? */
export function exceedsQuota(box: Pick<Mailbox, 'quotaBytes' | 'usedBytes'>, size: number): boolean {
  return box.quotaBytes > 0 && box.usedBytes + size > box.quotaBytes;
}

/** exceedsQuota for a mailbox known by uid (read now). */
export async function wouldExceedQuota(deps: Pick<Deps, 'store'>, mailboxUid: string, size: number): Promise<boolean> {
  const box = await deps.store.repo<Mailbox>(MailboxModel).get(mailboxUid);
  return Boolean(box && exceedsQuota(box, size));
}
