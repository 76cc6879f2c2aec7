// The page's unlocked key vaults (Spec: Key vault; Token lifecycle). Keys live only in this page's
// memory, as CryptoKeys that cannot be exported; the master key is not kept (changing an unlock method
// asks for a secret again). Everything is locked again on sign-out, after the idle time the user
// chose, and when the page goes away (closing the tab ends the page's memory anyway). This module is
// small and loads with every page; the S/MIME code (pkijs) loads only when a key is used.
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

export function setUnlocked(v: UnlockedVault): void {
  unlocked.set(v.mailboxUid, v);
  touch();
  changed();
  for (const fn of unlockHooks) fn(v);
}

/** Runs each time a vault is unlocked (the local search index catches up with new mail). */
export function onUnlock(fn: (v: UnlockedVault) => void): () => void {
  unlockHooks.add(fn);
  return () => void unlockHooks.delete(fn);
}

/** Locks one mailbox's vault, or every one; what was decrypted with them is dropped too (onLock). */
export function lock(mailboxUid: string | null = null): void {
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
  touch();
}

let idleTimer: ReturnType<typeof setTimeout> | null = null;

/** Activity: the idle time starts again (only while something is unlocked). */
function touch(): void {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = null;
  const minutes = idleMinutes();
  if (!unlocked.size || minutes <= 0) return;
  idleTimer = setTimeout(() => lock(), minutes * 60_000);
}

let started = false;

/** Installs the locks: sign-out, idle, the page going away. Called once by every page that uses keys. */
export function startKeyring(): void {
  if (started) return;
  started = true;
  for (const type of ['keydown', 'pointerdown', 'wheel'] as const) addEventListener(type, touch, { passive: true, capture: true });
  addEventListener('pagehide', () => lock());
  beforeSignOut(() => lock());
}
