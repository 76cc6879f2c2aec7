// Elevation in the consoles (Spec: Roles and elevation): how long the current elevation stays fresh,
// a way to elevate before it is asked for, and — after a change was refused with 403 api-104 and the
// sign-in service sent the user back — that change offered again on the view it was made on.
import { useEffect, useState } from 'react';
import { api, describeError, PENDING_KEY, type PendingChange } from './api.js';
import { readSession, type SessionInfo } from './session.js';

/** A change kept from before the elevation: only on its own page and for a quarter of an hour. */
function pendingFor(page: string): PendingChange | null {
  try {
    const p = JSON.parse(sessionStorage.getItem(PENDING_KEY) ?? 'null') as PendingChange | null;
    return p && p.page.split('#')[0] === page.split('#')[0] && Date.now() - p.at < 15 * 60_000 ? p : null;
  } catch {
    return null;
  }
}

const elevateUrl = () => {
  const auth = document.body.dataset.authUrl;
  return auth ? `${auth}/auth/elevate?return_to=${encodeURIComponent(location.href)}` : null;
};

/** Minutes and seconds left, or null when not elevated (or no longer fresh). */
function left(until: string | null, now: number): string | null {
  const ms = until ? Date.parse(until) - now : 0;
  if (ms <= 0) return null;
  const m = Math.floor(ms / 60_000);
  return m >= 1 ? `${m} min` : `${Math.ceil(ms / 1000)} s`;
}

/** The elevation's freshness, counted down, with a link to elevate (again). */
export function ElevationBar() {
  const [session, setSession] = useState<SessionInfo | null>(null);
  const [now, setNow] = useState(Date.now());
  useEffect(() => {
    void readSession().then(setSession, () => undefined);
    const tick = setInterval(() => setNow(Date.now()), 15_000);
    return () => clearInterval(tick);
  }, []);
  if (!session) return null;
  const fresh = left(session.elevatedUntil, now);
  const url = elevateUrl();
  return (
    <p className={fresh ? 'elevation fresh' : 'elevation'} role="status">
      {fresh
        ? `Elevated: sensitive changes are allowed for ${fresh} more.`
        : 'Not elevated: a sensitive change first asks you to confirm who you are.'}{' '}
      {url && <a href={url}>{fresh ? 'Elevate again' : 'Elevate now'}</a>}
    </p>
  );
}

/** After the way through elevation: the change that was refused, offered again (done only when the user says so). */
export function PendingOffer({ onDone }: { onDone(): void }) {
  const [pending, setPending] = useState(() => pendingFor(location.pathname + location.hash));
  const [outcome, setOutcome] = useState('');
  if (!pending) return outcome ? <p role="status">{outcome}</p> : null;
  const drop = () => {
    sessionStorage.removeItem(PENDING_KEY);
    setPending(null);
  };
  const repeat = async () => {
    drop();
    try {
      await api(pending.path, { method: pending.method, body: pending.body, label: pending.label });
      setOutcome(`Done: ${pending.label}.`);
      onDone();
    } catch (e) {
      setOutcome(`${pending.label} failed: ${describeError(e)}`);
    }
  };
  return (
    <div className="notice" role="region" aria-label="Change waiting for you">
      Before confirming who you are, you asked to: <strong>{pending.label}</strong>.{' '}
      <button type="button" onClick={() => void repeat()}>
        Do it now
      </button>{' '}
      <button type="button" className="secondary" onClick={drop}>
        Dismiss
      </button>
    </div>
  );
}
