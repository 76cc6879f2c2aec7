// The local search index at rest (Spec: Token lifecycle; issue #32): one IndexedDB record per
// mailbox, the index sealed with the mailbox's index key (AES-256-GCM, derived from the master key,
// not exportable), a fresh 96-bit IV for every write and the mailbox uid as additional data, so a
// record copied to another mailbox's place does not open. Nothing else is stored: the key of the
// record is the mailbox uid, which the server knows anyway. Sign-out deletes the database
// (shared/session.ts clearLocalData); a connection is open only for one read or write, so that
// deletion is never kept waiting.
import { openDB, type IDBPDatabase } from 'idb';
import type { Key } from './keyring.js';

export const INDEX_DB = 'svcmail-local-index';
const STORE = 'indexes';

interface SealedIndex {
  iv: Uint8Array<ArrayBuffer>;
  data: ArrayBuffer;
}

const additionalData = (mailboxUid: string) => new TextEncoder().encode(`svcmail local search index v1\n${mailboxUid}`);

/**
 * Runs `fn` on a connection opened for it alone, unless `live()` says the keys were locked since
 * (after a sign-out's lock the database must not be made again): checked right before opening.
 */
async function withDb<T>(live: () => boolean, fn: (db: IDBPDatabase) => Promise<T>): Promise<T | null> {
  if (!live()) return null;
  const db = await openDB(INDEX_DB, 1, {
    upgrade: (d) => void d.createObjectStore(STORE),
    // Another page wants the database gone or upgraded: let it.
    blocking: (_current, _blocked, event) => (event.target as IDBDatabase).close(),
  });
  try {
    return await fn(db);
  } finally {
    db.close();
  }
}

/** The mailbox's saved index as text, or null when there is none or it does not open with this key (another vault generation). */
export async function readIndex(mailboxUid: string, key: Key, live: () => boolean): Promise<{ text: string; bytes: number } | null> {
  const sealed = (await withDb(live, (db) => db.get(STORE, mailboxUid))) as SealedIndex | undefined | null;
  if (!sealed?.iv || !(sealed.data instanceof ArrayBuffer)) return null;
  try {
    const plain = await crypto.subtle.decrypt(
      { name: 'AES-GCM', iv: sealed.iv, additionalData: additionalData(mailboxUid) },
      key,
      sealed.data,
    );
    return { text: new TextDecoder().decode(plain), bytes: sealed.data.byteLength };
  } catch {
    return null;
  }
}

/** Seals and saves the mailbox's index; false when the keys were locked before it could be written. Answers the sealed size. */
export async function writeIndex(mailboxUid: string, key: Key, text: string, live: () => boolean): Promise<number | null> {
  const iv = crypto.getRandomValues(new Uint8Array(12));
  const data = await crypto.subtle.encrypt(
    { name: 'AES-GCM', iv, additionalData: additionalData(mailboxUid) },
    key,
    new TextEncoder().encode(text),
  );
  const sealed: SealedIndex = { iv, data };
  const done = await withDb(live, (db) => db.put(STORE, sealed, mailboxUid));
  return done === null ? null : data.byteLength;
}
