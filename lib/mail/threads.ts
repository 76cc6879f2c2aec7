// Conversations per folder: one record per (folder, threadId) holding how many of the thread's
// messages are in the folder, how many of them are unread, and which is the newest — what a
// conversation list shows, one row per thread, read page by page like the messages themselves (a
// 100 000-message folder is no slower). The records follow the folder counters: every place that
// changes a folder's counts (filing, copy, move, delete, read state) changes its threads in the same
// transaction. A folder whose threads were never built (mail filed before this record existed) is
// built from its messages on its first conversation listing (ensureThreads).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineModel, type Row, type Store } from '../storage/index.js';
import { FolderModel, type Folder } from './folders.js';
import { MessageModel, type Message } from './messages.js';

export const threadFields = {
  mailboxUid: z.string(),
  folderUid: z.string(),
  threadId: z.string(),
  /** Messages of the thread in the folder. */
  count: z.number().int(),
  /** Of them unread. */
  unread: z.number().int(),
  /** The newest of them: what the conversation's row shows, and its place in the list. */
  latestUid: z.string(),
  latestDate: z.date(),
};

export const ThreadModel = defineModel({
  name: 'thread',
  table: 'threads',
  fields: threadFields,
  // The conversation list's order: newest first, then the one filed last (Date headers count whole seconds).
  indexes: [{ fields: ['folderUid', 'latestDate', 'latestUid'] }],
});

export type Thread = z.infer<z.ZodObject<typeof threadFields>>;
export type ThreadRecord = Row<Thread>;

/** What a thread record needs of a message. */
export type ThreadMember = Pick<Message, 'mailboxUid' | 'folderUid' | 'threadId' | 'date' | 'seen'> & { uid: string };

/** The uid of a folder's record of one thread: the same from every process, so the first message of a thread creates it and the next add to it. */
export const threadUid = (folderUid: string, threadId: string): string =>
  createHash('sha256').update(folderUid).update('\0').update(threadId).digest('hex');

const recordOf = (m: ThreadMember, count: number, unread: number) => ({
  uid: threadUid(m.folderUid, m.threadId),
  mailboxUid: m.mailboxUid,
  folderUid: m.folderUid,
  threadId: m.threadId,
  count,
  unread,
  latestUid: m.uid,
  latestDate: m.date,
});

/**
 * Messages came into their folders (filed, copied, moved in): their threads count them, and a newer
 * one becomes its thread's row — also one of the same time (Date headers count whole seconds: a
 * quick reply is as new as what it answers, and the one filed last is the one to show).
 */
export async function threadsGained(store: Store, messages: ThreadMember[]): Promise<void> {
  if (!messages.length) return;
  const repo = store.repo<Thread>(ThreadModel);
  await repo.createOrAddMany(
    messages.map((m) => recordOf(m, 1, m.seen ? 0 : 1)),
    ['count', 'unread'],
  );
  for (const m of messages)
    await repo.updateMany(
      { uid: threadUid(m.folderUid, m.threadId), latestDate: { $lte: m.date } },
      { latestUid: m.uid, latestDate: m.date },
    );
}

/**
 * A message left its folder (deleted, moved out; call after its record changed): its thread counts
 * one less, is gone with its last message, and shows the next newest when it was the thread's row.
 */
export async function threadLost(store: Store, m: ThreadMember): Promise<void> {
  const repo = store.repo<Thread>(ThreadModel);
  const uid = threadUid(m.folderUid, m.threadId);
  const t = await repo.increment(uid, { count: -1, unread: m.seen ? 0 : -1 });
  if (!t) return;
  if (t.count <= 0) {
    await repo.deleteMany({ uid, count: { $lte: 0 } });
    return;
  }
  if (t.latestUid !== m.uid) return;
  const [next] = await store.repo<Message>(MessageModel).list({
    filter: { mailboxUid: m.mailboxUid, threadId: m.threadId, folderUid: m.folderUid },
    sort: [
      { field: 'date', dir: 'desc' },
      { field: 'uid', dir: 'desc' },
    ],
    limit: 1,
  });
  if (next) await repo.update(uid, { latestUid: next.uid, latestDate: next.date });
}

/** A message of the folder was read (-1) or marked unread (+1). */
export async function threadSeenChanged(store: Store, m: ThreadMember, unread: 1 | -1): Promise<void> {
  await store.repo<Thread>(ThreadModel).increment(threadUid(m.folderUid, m.threadId), { unread });
}

const BUILD_PAGE = 5000;

/**
 * Builds the thread records of a folder from its messages, once: the folder row is written first
 * (threadsReady), so on PostgreSQL a filing into the folder waits for the build and then adds to
 * what it built; SQLite writes one transaction at a time anyway. Answers the folder as it stands.
 */
export async function ensureThreads(store: Store, folder: Row<Folder>): Promise<Row<Folder>> {
  if (folder.threadsReady) return folder;
  return store.transaction(async (tx) => {
    const ready = await tx.repo<Folder>(FolderModel).update(folder.uid, { threadsReady: true });
    const threads = new Map<string, ReturnType<typeof recordOf>>();
    for (let offset = 0; ; offset += BUILD_PAGE) {
      const page = await tx.repo<Message>(MessageModel).list({
        filter: { folderUid: folder.uid },
        sort: [{ field: 'uid', dir: 'asc' }],
        limit: BUILD_PAGE,
        offset,
      });
      for (const m of page) addTo(threads, m);
      if (page.length < BUILD_PAGE) break;
    }
    const repo = tx.repo<Thread>(ThreadModel);
    await repo.deleteMany({ folderUid: folder.uid });
    const all = [...threads.values()];
    for (let i = 0; i < all.length; i += 500) await repo.createMany(all.slice(i, i + 500));
    return ready;
  });
}

function addTo(threads: Map<string, ReturnType<typeof recordOf>>, m: ThreadMember): void {
  const uid = threadUid(m.folderUid, m.threadId);
  const t = threads.get(uid);
  if (!t) return void threads.set(uid, recordOf(m, 1, m.seen ? 0 : 1));
  t.count += 1;
  if (!m.seen) t.unread += 1;
  if (m.date >= t.latestDate) Object.assign(t, { latestUid: m.uid, latestDate: m.date }); // pages come in uid order: the later of a tie
}
