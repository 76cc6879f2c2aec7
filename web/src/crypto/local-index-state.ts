// What the local search index of decrypted mail is doing, per mailbox, for the views: a small store
// read with useSyncExternalStore. Changes are announced at most every 150 ms, so a catch-up adding
// hundreds of messages does not re-render the list for each one.

export interface IndexStatus {
  /** The mailbox's address (the status line names it when more than one is unlocked). */
  address: string;
  /** loading: the saved index is being read; catching-up: new encrypted mail is being opened; ready; failed: `problem` says why. */
  phase: 'loading' | 'catching-up' | 'ready' | 'failed';
  /** Messages in the index. */
  indexed: number;
  /** Of the running catch-up: messages to open, and opened so far. */
  todo: number;
  done: number;
  /** Messages these keys cannot open (encrypted to another key): left out of the index. */
  unreadable: number;
  problem: string | null;
}

const statuses = new Map<string, IndexStatus>();
const listeners = new Set<() => void>();
let version = 0;
let pending: ReturnType<typeof setTimeout> | null = null;

function announce(): void {
  pending = null;
  version++;
  for (const fn of listeners) fn();
}

/** Something the views show changed (a subject known, a status): they re-render soon. */
export function changed(): void {
  pending ??= setTimeout(announce, 150);
}

export function setStatus(mailboxUid: string, patch: Partial<IndexStatus> | null): void {
  if (patch === null) statuses.delete(mailboxUid);
  else {
    const before = statuses.get(mailboxUid) ?? {
      address: '',
      phase: 'loading',
      indexed: 0,
      todo: 0,
      done: 0,
      unreadable: 0,
      problem: null,
    };
    statuses.set(mailboxUid, { ...before, ...patch });
  }
  changed();
}

export const statusOf = (mailboxUid: string): IndexStatus | null => statuses.get(mailboxUid) ?? null;
export const allStatuses = (): Array<[string, IndexStatus]> => [...statuses];

export function subscribe(fn: () => void): () => void {
  listeners.add(fn);
  return () => void listeners.delete(fn);
}

export const snapshot = (): number => version;
