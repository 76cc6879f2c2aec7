// The local search index of decrypted mail (Spec: Token lifecycle; issue #32), as the rest of the
// app uses it. The server cannot search encrypted mail; this page can, once the mailbox's keys are
// unlocked: every encrypted message it opens is indexed here (MiniSearch, in memory), the index is
// kept in IndexedDB sealed with a key derived from the master key, read back at the next unlock,
// caught up with new encrypted mail in the background, and dropped from memory when the keys are
// locked; sign-out deletes it. This module is small and loads with the mail page; the index itself
// (MiniSearch, IndexedDB, the S/MIME code) loads with the first unlock.
import { useSyncExternalStore } from 'react';
import { keysOf, onLock, onUnlock, type UnlockedVault } from './keyring.js';
import type { OpenedMail } from './smime-mail.js';
import type { IndexedMessage, LocalDoc, LocalHit } from './local-index-engine.js';
import { allStatuses, setStatus, snapshot, statusOf, subscribe, type IndexStatus } from './local-index-state.js';

export type { IndexedMessage, IndexStatus, LocalDoc, LocalHit };

type Engine = typeof import('./local-index-engine.js');

let engine: Engine | null = null;
let loading: Promise<Engine> | null = null;

function loadEngine(): Promise<Engine> {
  loading ??= import('./local-index-engine.js').then(
    (e) => (engine = e),
    (e: unknown) => {
      loading = null;
      throw e;
    },
  );
  return loading;
}

let started = false;

/** Turns the index on for this page: it opens and catches up at each unlock, and leaves memory at each lock. Called once by every page that searches. */
export function startLocalIndex(): void {
  if (started) return;
  started = true;
  onUnlock(
    (keys) =>
      void loadEngine()
        .then((e) => e.unlocked(keys))
        .catch(() => {
          if (keysOf(keys.mailboxUid) === keys)
            setStatus(keys.mailboxUid, {
              address: keys.address,
              phase: 'failed',
              problem: 'The search index could not be loaded; reload the page.',
            });
        }),
  );
  onLock((mailboxUid) => {
    engine?.closeIndexes(mailboxUid);
    for (const [uid] of allStatuses()) if (mailboxUid === null || uid === mailboxUid) setStatus(uid, null);
  });
}

/**
 * Indexes a message the page has just decrypted (the reading pane calls it). Cheap when it is
 * indexed already; does nothing for a message that was not encrypted, or once the keys are locked.
 */
export async function indexOpened(keys: UnlockedVault, message: IndexedMessage, opened: OpenedMail): Promise<void> {
  if (!opened.encrypted || keysOf(keys.mailboxUid) !== keys) return;
  const indexed = engine?.indexOf(keys.mailboxUid);
  if (indexed?.docs.has(message.uid)) return;
  const index = indexed ?? (await (await loadEngine()).openIndex(keys));
  if (index.live) index.add(message, opened);
}

/** The encrypted messages of an unlocked mailbox matching the words (each word or the start of one), best first; [] when it is locked. */
export async function searchLocal(mailboxUid: string, query: string): Promise<LocalHit[]> {
  const keys = keysOf(mailboxUid);
  if (!keys || !query.trim()) return [];
  const e = await loadEngine();
  const index = await e.openIndex(keys);
  if (!index.live) return [];
  // Mail came since the last catch-up, perhaps: look again, in the background.
  if (!index.catching && Date.now() - index.caughtUpAt > e.STALE_MS) void e.runCatchUp(index);
  return index.search(query);
}

/** The decrypted subject of an indexed message of an unlocked mailbox, from memory; null when not known. */
export function localSubject(mailboxUid: string, uid: string): string | null {
  return engine?.indexOf(mailboxUid)?.docs.get(uid)?.subject ?? null;
}

/** A catch-up for a message the list shows but the index does not know: no sooner than this after the last one (ms). */
const NEW_MAIL_AFTER_MS = 10_000;
const soon = new Map<string, ReturnType<typeof setTimeout>>();

/**
 * The list shows an encrypted message the index does not know (new mail, most likely): while the
 * keys are unlocked, a catch-up runs soon to index it, no sooner than ten seconds after the last one.
 */
export function noticeUnknown(mailboxUid: string, uid: string): void {
  const index = engine?.indexOf(mailboxUid);
  if (!index || index.has(uid) || soon.has(mailboxUid)) return;
  const wait = Math.max(0, index.caughtUpAt + NEW_MAIL_AFTER_MS - Date.now());
  const timer = setTimeout(() => {
    soon.delete(mailboxUid);
    const now = engine?.indexOf(mailboxUid);
    if (now) void engine!.runCatchUp(now);
  }, wait);
  soon.set(mailboxUid, timer);
}

/** What the index keeps of a message (subject, folder, date, whether it has files); null when not known. */
export function localDoc(mailboxUid: string, uid: string): LocalDoc | null {
  return engine?.indexOf(mailboxUid)?.docs.get(uid) ?? null;
}

/** Re-renders the caller when the index changes (a subject became known, the status moved); answers a change counter. */
export const useLocalIndex = (): number => useSyncExternalStore(subscribe, snapshot);

/** The index status of a mailbox (null: its keys are locked), re-rendering as it moves. */
export function useIndexStatus(mailboxUid: string): IndexStatus | null {
  useLocalIndex();
  return statusOf(mailboxUid);
}

/** Every unlocked mailbox's index status, re-rendering as they move. */
export function useIndexStatuses(): Array<[string, IndexStatus]> {
  useLocalIndex();
  return allStatuses();
}
