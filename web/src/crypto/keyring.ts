// The unlocked key vaults (Spec: Key vault; Token lifecycle). Keys live only in memory, as CryptoKeys
// that cannot be exported; the master key is not kept (changing an unlock method asks for a secret
// again). They are unlocked once per browser session: the pages of the origin share them through a
// SharedWorker (keyring.worker.ts) that holds them while a page of the mail app is open, so moving
// between mail and settings or reloading keeps them. Everything is locked again on sign-out (in every
// page), after the idle time the user chose (activity in any page counts), and a few seconds after
// the last page goes away. Where the browser has no SharedWorker, or does not keep one alive across a
// navigation, the keys are the page's own and lock when it goes away. This module is small and loads
// with every page; the S/MIME code (pkijs) loads only when a key is used.
import { useSyncExternalStore } from 'react';
import { beforeSignOut } from '../shared/session.js';

/** A WebCrypto key, as the page sees it. */
export type Key = Awaited<ReturnType<typeof crypto.subtle.importKey>>;

export interface UnlockedVault {
  mailboxUid: string;
  address: string;
  generation: number;
  /** ECDH P-256: opens messages encrypted to encryptionCertificate. */
  encryptionKey: Key;
  /** ECDSA P-256: signs (with signingCertificate, when one is installed). */
  signingKey: Key;
  encryptionCertificate: string;
  signingCertificate: string | null;
  /** The service's CA certificates: signatures chaining to them are trusted. */
  caCertificates: string[];
  /** AES-GCM key of the local search index, derived from the master key. */
  indexKey: Key;
}

const unlocked = new Map<string, UnlockedVault>();
const listeners = new Set<() => void>();
const lockHooks = new Set<(mailboxUid: string | null) => void>();
const unlockHooks = new Set<(v: UnlockedVault) => void>();
let snapshot = 0;

function changed(): void {
  snapshot++;
  for (const fn of listeners) fn();
}

/** The unlocked vault of a mailbox, or null. */
export const keysOf = (mailboxUid: string): UnlockedVault | null => unlocked.get(mailboxUid) ?? null;

/** Holds an unlocked vault (and hands it to the other pages of the session, unless it came from them). */
export function setUnlocked(v: UnlockedVault, shared = false): void {
  unlocked.set(v.mailboxUid, v);
  if (!shared) share?.postMessage({ op: 'put', vault: v });
  touch(true);
  changed();
  for (const fn of unlockHooks) fn(v);
}

/** Runs each time a vault is unlocked (the local search index catches up with new mail). */
export function onUnlock(fn: (v: UnlockedVault) => void): () => void {
  unlockHooks.add(fn);
  return () => void unlockHooks.delete(fn);
}

/** Locks one mailbox's vault, or every one; what was decrypted with them is dropped too (onLock). */
export function lock(mailboxUid: string | null = null, shared = false): void {
  if (!shared) share?.postMessage({ op: 'lock', mailboxUid });
  if (mailboxUid) unlocked.delete(mailboxUid);
  else unlocked.clear();
  for (const fn of lockHooks) fn(mailboxUid);
  changed();
}

/** Runs when a vault is locked (null: all of them): drop decrypted content and the search index's key. */
export function onLock(fn: (mailboxUid: string | null) => void): () => void {
  lockHooks.add(fn);
  return () => void lockHooks.delete(fn);
}

const subscribe = (fn: () => void) => {
  listeners.add(fn);
  return () => void listeners.delete(fn);
};

/** The mailbox's unlocked vault, re-rendering when it is unlocked or locked. */
export function useUnlocked(mailboxUid: string | null | undefined): UnlockedVault | null {
  useSyncExternalStore(subscribe, () => snapshot);
  return mailboxUid ? keysOf(mailboxUid) : null;
}

// ----- locking when idle -----

export const IDLE_KEY = 'svcmail:lock-after-minutes';
export const IDLE_DEFAULT_MINUTES = 15;

/** Minutes without a key press or click after which the vaults lock; 0: only on sign-out and when the page goes away. */
export function idleMinutes(): number {
  const v = Number(localStorage.getItem(IDLE_KEY) ?? IDLE_DEFAULT_MINUTES);
  return Number.isFinite(v) && v >= 0 ? v : IDLE_DEFAULT_MINUTES;
}

export function setIdleMinutes(minutes: number): void {
  localStorage.setItem(IDLE_KEY, String(minutes));
  touch(true);
}

let idleTimer: ReturnType<typeof setTimeout> | null = null;
let toldAt = 0;

/**
 * Activity: the idle time starts again (only while something is unlocked). With shared keys the
 * session's worker keeps the time (told at most every 15 s, and at once when `now`), so activity in
 * any page keeps every page unlocked.
 */
function touch(now = false): void {
  const minutes = idleMinutes();
  if (share) {
    if (!now && Date.now() - toldAt < 15_000) return;
    toldAt = Date.now();
    share.postMessage({ op: 'touch', minutes });
    return;
  }
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = null;
  if (!unlocked.size || minutes <= 0) return;
  idleTimer = setTimeout(() => lock(), minutes * 60_000);
}

// ----- sharing between the pages of the session -----

let share: MessagePort | null = null;
let settled = false;
const settledListeners = new Set<() => void>();

/** Whether the keys are shared by the pages of this browser session (else each page unlocks for itself). */
export const sharedKeys = (): boolean => share !== null;

/** False until the keys the session already holds are known (the unlock form waits: no flash of it). */
export function useKeysSettled(): boolean {
  return useSyncExternalStore(
    (fn) => (settledListeners.add(fn), () => void settledListeners.delete(fn)),
    () => settled,
  );
}

function settle(): void {
  if (settled) return;
  settled = true;
  for (const fn of settledListeners) fn();
}

type FromWorker = { op: 'all'; vaults: UnlockedVault[] } | { op: 'put'; vault: UnlockedVault } | { op: 'lock'; mailboxUid: string | null };

/** Connects to the session's keyring worker; false where the browser cannot keep one across pages. */
function connectShared(): boolean {
  if (typeof SharedWorker === 'undefined') return false;
  try {
    // extendedLifetime (Chromium): the worker outlives a navigation to the next page of the app.
    share = new SharedWorker(new URL('./keyring.worker.ts', import.meta.url), {
      type: 'module',
      name: 'svcmail-keyring',
      extendedLifetime: true,
    } as WorkerOptions).port;
  } catch {
    return false;
  }
  share.onmessage = (e: MessageEvent<FromWorker>) => {
    const m = e.data;
    if (m.op === 'all') for (const v of m.vaults) setUnlocked(v, true);
    else if (m.op === 'put') setUnlocked(m.vault, true);
    else lock(m.mailboxUid, true);
    if (m.op === 'all') settle();
  };
  share.start();
  share.postMessage({ op: 'hello' });
  // A worker that never answers (blocked by a policy) leaves the page keeping its own keys.
  setTimeout(() => {
    if (settled) return;
    share?.close();
    share = null;
    ownKeys();
  }, 2000);
  return true;
}

/** Without the session's worker: the page's keys are its own, its idle timer counts, and they lock when it goes away. */
function ownKeys(): void {
  settle();
  addEventListener('pagehide', () => lock());
  touch(true);
}

let started = false;

/** Installs the locks: sign-out, idle, the page going away; joins the session's keys. Called once by every page that uses keys. */
export function startKeyring(): void {
  if (started) return;
  started = true;
  for (const type of ['keydown', 'pointerdown', 'wheel'] as const) addEventListener(type, () => touch(), { passive: true, capture: true });
  if (connectShared()) addEventListener('pagehide', () => share?.postMessage({ op: 'bye' }));
  else ownKeys();
  beforeSignOut(() => lock());
}
