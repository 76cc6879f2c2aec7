import { ApiError } from '../errors/index.js';
import { crashPoint } from '../crash-points/index.js';
import type { Deps } from '../context/index.js';
import { addBlobRefs, openBlobStore, releaseBlobs, type BlobStore, type Row, type StoredBlob, type Store } from '../storage/index.js';
import { withSafeNames } from './attachment-names.js';
import { FolderModel, type Folder, type FolderRole } from './folders.js';
import { MailboxModel, type Mailbox } from './mailboxes.js';
import { MessageModel, type Message, type MessageRecord, type ParsedMessage } from './messages.js';
import { searchDocument } from './search.js';
import { threadsGained } from './threads.js';

export type StoredRaw = StoredBlob;
export type { MessageRecord } from './messages.js';

const blobStores = new WeakMap<object, BlobStore>();
/** The blob store of mail:blobs:backend, one per configuration (files) or per store (database, gridfs). */
export function blobsOf(deps: Pick<Deps, 'config' | 'store'>): BlobStore {
  const key = deps.config.get('mail:blobs:backend') === 'files' ? deps.config : deps.store;
  let b = blobStores.get(key);
  if (!b) blobStores.set(key, (b = openBlobStore(deps.config, deps.store)));
  return b;
}

/** The raw message into the blob store, once per content (idempotent by sha256). */
export function storeRaw(deps: Pick<Deps, 'config' | 'store'>, raw: Buffer): Promise<StoredRaw> {
  return blobsOf(deps).put(raw);
}

/**
 * Frees the raw messages of deleted messages that nothing needs any more: no other message, and no
 * queued, quarantined or outgoing copy (releaseBlobs). Call after the deleting transaction committed.
 */
export function freeRaw(deps: Pick<Deps, 'config' | 'store'>, blobIds: Iterable<string>): Promise<number> {
  return releaseBlobs(deps.store, blobsOf(deps), blobIds);
}

export function loadRaw(deps: Pick<Deps, 'config' | 'store'>, blobId: string): Promise<Buffer> {
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
  /** Delivery: the sender was verified (MessageModel senderVerified). */
  senderVerified?: boolean;
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

export async function folderOf(
  store: Store,
  mailboxUid: string,
  ref: { folderUid?: string; folderRole?: FolderRole },
): Promise<Row<Folder>> {
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
  deps.events.publish([folder.uid], {
    type: 'folder',
    action: 'update',
    data: {
      uid: folder.uid,
      mailboxUid: folder.mailboxUid,
      unreadCount: folder.unreadCount,
      totalCount: folder.totalCount,
      version: folder.version,
    },
  });
}

export function publishMessage(deps: Pick<Deps, 'events'>, action: 'create' | 'update' | 'delete', msg: MessageRecord): void {
  // As the messages resource shows a record: ingestKey is hidden, each attachment has its safe name.
  const { ingestKey: _hidden, ...shown } = msg;
  deps.events.publish([msg.folderUid], { type: 'message', action, data: withSafeNames(shown) });
}

/**
 * Files one copy: message row, folder counts, mailbox usage and blob reference commit together.
 * Copies a scan round files (durableLater) at about the same time are filed together (FilingBatch).
 */
export async function fileMessage(deps: Deps, req: FileRequest): Promise<MessageRecord> {
  const filed = req.durableLater ? await batchOf(deps, req.durableLater).add(req) : await fileAlone(deps, req);
  // A copy filed the first time by a run whose deferred document was never written (it crashed first) gets it now.
  req.deferText?.(filed.uid, req.document ?? searchDocument(req.parsed));
  return filed;
}

async function fileAlone(deps: Deps, req: FileRequest): Promise<MessageRecord> {
  try {
    return await fileOnce(deps, req);
  } catch (e) {
    // Two deliveries of the same key at once: the unique (mailboxUid, ingestKey) lets one win; the other answers its copy.
    if (!(e instanceof ApiError && e.code === 'api-112' && req.idempotencyKey)) throw e;
    const existing = await deps.store.repo<Message>(MessageModel).findOne({ mailboxUid: req.mailboxUid, ingestKey: req.idempotencyKey });
    if (!existing) throw e;
    return existing;
  }
}

const flagsOf = (req: FileRequest) => ({ seen: false, flagged: false, answered: false, forwarded: false, draft: false, ...req.flags });

/** The message record of a copy filed into this folder. */
function messageOf(req: FileRequest, folderUid: string): Message {
  return {
    ...req.parsed.fields,
    ...flagsOf(req),
    mailboxUid: req.mailboxUid,
    folderUid,
    blobId: req.raw.blobId,
    size: req.raw.size,
    labels: req.labels ?? [],
    focused: req.focused ?? null,
    ingestKey: req.idempotencyKey ?? null,
    receiptTo: req.receiptTo ?? null,
    senderVerified: req.senderVerified ?? false,
    receipts: [],
    sendAt: req.sendAt ?? null,
  };
}

function publishFiled(deps: Pick<Deps, 'events'>, req: FileRequest, messages: MessageRecord[], folders: Array<Row<Folder>>): void {
  const publish = () => {
    for (const m of messages) publishMessage(deps, 'create', m);
    for (const f of folders) publishFolder(deps, f);
  };
  if (req.durableLater) req.durableLater.publish(publish);
  else publish();
}

async function fileOnce(deps: Deps, req: FileRequest): Promise<MessageRecord> {
  const { message, folder } = await deps.store.transaction(
    async (tx) => {
      const messages = tx.repo<Message>(MessageModel);
      // A key filed before: the unique (mailboxUid, ingestKey) refuses the row (api-112), the transaction
      // is undone and fileMessage answers the copy filed the first time (no read first for the rare retry).
      // The folder is found and its counts raised in one statement (the one folderOf would answer).
      const f = await tx
        .repo<Folder>(FolderModel)
        .increment(
          req.folderUid
            ? { uid: req.folderUid, mailboxUid: req.mailboxUid }
            : { mailboxUid: req.mailboxUid, role: req.folderRole ?? 'inbox' },
          { totalCount: 1, unreadCount: flagsOf(req).seen ? 0 : 1 },
        );
      if (!f) throw new ApiError('api-107', 'No such folder in this mailbox');
      const created = await messages.create(messageOf(req, f.uid));
      await threadsGained(tx, [created]);
      if (!req.deferText) await messages.setText(created.uid, req.document ?? searchDocument(req.parsed));
      crashPoint('ingest.mid-filing'); // the message row and folder counts written, the mailbox usage not yet: the transaction must undo it
      await tx.repo<Mailbox>(MailboxModel).increment(req.mailboxUid, { usedBytes: req.raw.size });
      await addBlobRefs(tx, [req.raw]);
      return { message: created, folder: f };
    },
    { syncCommit: !req.durableLater },
  );
  publishFiled(deps, req, [message], [folder]);
  return message;
}

/**
 * The folders copies go to, in the order of the requests: a folder named by uid must be in the
 * copy's mailbox; otherwise the mailbox's folder of the role (the first by uid, as findOne). Null
 * when one of them is missing.
 */
async function foldersFor(store: Store, reqs: FileRequest[]): Promise<Array<Row<Folder>> | null> {
  const repo = store.repo<Folder>(FolderModel);
  const named = [...new Set(reqs.flatMap((r) => (r.folderUid ? [r.folderUid] : [])))];
  const byRole = reqs.filter((r) => !r.folderUid);
  const mailboxes = [...new Set(byRole.map((r) => r.mailboxUid))];
  const roles = [...new Set(byRole.map((r) => r.folderRole ?? 'inbox'))];
  const [namedRows, roleRows] = await Promise.all([
    named.length ? repo.list({ filter: { uid: { $in: named } } }) : [],
    mailboxes.length
      ? repo.list({ filter: { mailboxUid: { $in: mailboxes }, role: { $in: roles } }, sort: [{ field: 'uid', dir: 'asc' }] })
      : [],
  ]);
  const byUid = new Map(namedRows.map((f) => [f.uid, f]));
  const ofRole = new Map<string, Row<Folder>>();
  for (const f of roleRows) if (!ofRole.has(`${f.mailboxUid}\0${f.role}`)) ofRole.set(`${f.mailboxUid}\0${f.role}`, f);
  const out: Array<Row<Folder>> = [];
  for (const r of reqs) {
    const f = r.folderUid ? byUid.get(r.folderUid) : ofRole.get(`${r.mailboxUid}\0${r.folderRole ?? 'inbox'}`);
    if (!f || f.mailboxUid !== r.mailboxUid) return null;
    out.push(f);
  }
  return out;
}

/**
 * Several copies filed in one transaction: the folders read once, their counts raised, the messages
 * (and their value rows) created, the mailboxes' usage raised and the blob references added, each
 * in one statement for all of them on PostgreSQL, instead of a transaction of five statements per
 * copy. All or nothing: a copy filed before (a re-run) or a missing folder undoes it all (and
 * FilingBatch files each copy alone, as it always did).
 */
async function fileTogether(deps: Deps, reqs: FileRequest[]): Promise<MessageRecord[]> {
  const { messages, folders } = await deps.store.transaction(
    async (tx) => {
      const targets = await foldersFor(tx, reqs);
      if (!targets) throw new ApiError('api-107', 'No such folder in this mailbox');
      const folders = await tx
        .repo<Folder>(FolderModel)
        .incrementMany(reqs.map((r, i) => ({ uid: targets[i].uid, deltas: { totalCount: 1, unreadCount: flagsOf(r).seen ? 0 : 1 } })));
      const repo = tx.repo<Message>(MessageModel);
      const messages = await repo.createMany(reqs.map((r, i) => messageOf(r, targets[i].uid)));
      await threadsGained(tx, messages);
      const texts = new Map(
        reqs.flatMap((r, i) => (r.deferText ? [] : [[messages[i].uid, r.document ?? searchDocument(r.parsed)] as const])),
      );
      if (texts.size) await repo.setTexts(texts);
      crashPoint('ingest.mid-filing');
      await tx.repo<Mailbox>(MailboxModel).incrementMany(reqs.map((r) => ({ uid: r.mailboxUid, deltas: { usedBytes: r.raw.size } })));
      await addBlobRefs(
        tx,
        reqs.map((r) => r.raw),
      );
      return { messages, folders };
    },
    { syncCommit: !reqs.every((r) => r.durableLater) },
  );
  publishFiled(deps, reqs[0], messages, folders);
  return messages;
}

/**
 * Collects the copies a scan round files within one turn of the event loop (its entries are
 * delivered side by side, so most of their copies reach filing together) and files them with
 * fileTogether; when that fails, each copy is filed alone, so one copy's trouble (filed before,
 * a folder deleted meanwhile, a value the database refuses) is its own, as when copies are filed one
 * by one.
 */
class FilingBatch {
  #waiting: Array<{ req: FileRequest; resolve(m: MessageRecord): void; reject(e: unknown): void }> = [];

  constructor(private readonly deps: Deps) {}

  add(req: FileRequest): Promise<MessageRecord> {
    return new Promise((resolve, reject) => {
      if (this.#waiting.push({ req, resolve, reject }) === 1) setImmediate(() => void this.#flush());
    });
  }

  async #flush(): Promise<void> {
    const items = this.#waiting.splice(0);
    const together =
      items.length > 1
        ? await fileTogether(
            this.deps,
            items.map((i) => i.req),
          ).catch((e: unknown) => {
            this.deps.log.debug({ copies: items.length, err: (e as Error)?.message }, 'filing copies together failed; filing each alone');
            return null;
          })
        : null;
    if (together) items.forEach((item, i) => item.resolve(together[i]));
    else for (const item of items) fileAlone(this.deps, item.req).then(item.resolve, item.reject);
  }
}

const batches = new WeakMap<object, FilingBatch>();
function batchOf(deps: Deps, round: object): FilingBatch {
  let b = batches.get(round);
  if (!b) batches.set(round, (b = new FilingBatch(deps)));
  return b;
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
