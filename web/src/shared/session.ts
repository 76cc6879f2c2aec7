// The page's session (Spec: Token lifecycle): the token is renewed through the sign-in service 45
// minutes into its life, and signing out clears what the page keeps in the browser — IndexedDB
// (keys, the local search index), caches, local and session storage — before the sign-in service's
// POST /api/auth/logout clears the cookies. Then the browser goes to the sign-in page.
import { api } from './api.js';

/** GET /api/session: who the token names, its elevation, and when it ends and should be renewed. */
export interface SessionInfo {
  uid: string;
  roles: string[];
  elevatedUntil: string | null;
  expiresAt: string;
  renewAt: string;
}

let current: Promise<SessionInfo> | null = null;

/** The page's session, read once per token (renewal, elevation and sign-in give a new page or a new read). */
export function readSession(): Promise<SessionInfo> {
  current ??= api<SessionInfo>('/api/session');
  current.catch(() => (current = null));
  return current;
}

const authUrl = () => document.body.dataset.authUrl || '';
/** Things to stop before signing out (open sockets, timers). */
const onSignOut: Array<() => void> = [];

export const beforeSignOut = (fn: () => void): void => void onSignOut.push(fn);

let renewed = 0;

/** Renews the token at its renewal time, then again for the next token; a failed renewal leaves the 401 path to sign in again. */
async function keepRenewed(): Promise<void> {
  const s = await readSession();
  // At least a minute apart: a clock that is off, or a renewal that did not move the time, never spins.
  const wait = Math.max(60_000 * Number(renewed > 0), Date.parse(s.renewAt) - Date.now());
  setTimeout(async () => {
    const res = await fetch(`${authUrl()}/api/auth/refresh`, { method: 'POST', credentials: 'include' }).catch(() => null);
    renewed++;
    current = null; // a new token: its times are read again
    if (res?.ok) void keepRenewed().catch(() => undefined);
  }, wait);
}

/** Deletes every IndexedDB database, cache and stored value of this origin. */
export async function clearLocalData(): Promise<void> {
  const dbs = (await indexedDB.databases?.()) ?? [];
  await Promise.all(
    dbs.map(
      (db) =>
        new Promise<void>((done) => {
          if (!db.name) return done();
          const req = indexedDB.deleteDatabase(db.name);
          req.onsuccess = req.onerror = req.onblocked = () => done();
        }),
    ),
  );
  if ('caches' in globalThis) await Promise.all((await caches.keys()).map((k) => caches.delete(k)));
  localStorage.clear();
  sessionStorage.clear();
}

/** Signs out: local data cleared first, then the sign-in service clears the cookies; then to its sign-in page. */
export async function signOut(): Promise<void> {
  for (const fn of onSignOut) fn();
  await clearLocalData();
  const base = authUrl();
  const res = await fetch(`${base}/api/auth/logout`, { method: 'POST', credentials: 'include' }).catch(() => null);
  // Not signed out at the sign-in service: the session would go on; say so rather than pretend.
  if (!res?.ok) return alert('Signing out did not reach the sign-in service. Check the connection and sign out again.');
  location.assign(`${base}/auth/signin?return_to=${encodeURIComponent(location.origin + location.pathname)}`);
}

/** Starts the page's session handling: renewal, and the header's Sign out button. Without a sign-in service (development) nothing to do. */
export function startSession(): void {
  if (!authUrl()) return;
  document.getElementById('sign-out')?.addEventListener('click', () => void signOut());
  void keepRenewed().catch(() => undefined);
}
