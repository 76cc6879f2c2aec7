// The unlocked keys of one browser session, shared by its pages (keyring.ts): a SharedWorker that
// holds the vaults pages hand it (non-extractable CryptoKeys, certificates, the index key), gives
// them to every page that joins, and passes each unlock and lock on to the other pages. It locks
// everything after the idle time (the pages report activity) and a few seconds after the last page
// said goodbye, unless a page joins meanwhile (the next page of a navigation, a reload).
/// <reference lib="webworker" />

interface Vault {
  mailboxUid: string;
}
type FromPage =
  | { op: 'hello' }
  | { op: 'bye' }
  | { op: 'put'; vault: Vault }
  | { op: 'lock'; mailboxUid: string | null }
  | { op: 'touch'; minutes: number };

/** How long the keys outlive the last page: time for the next page of a navigation to join. */
const GRACE_MS = 5000;

const scope = globalThis as unknown as SharedWorkerGlobalScope;
const vaults = new Map<string, Vault>();
const ports = new Set<MessagePort>();
let idleTimer: ReturnType<typeof setTimeout> | null = null;
let lastPageTimer: ReturnType<typeof setTimeout> | null = null;

function tellOthers(message: unknown, except: MessagePort | null): void {
  for (const p of ports) if (p !== except) p.postMessage(message);
}

function lockVaults(mailboxUid: string | null, by: MessagePort | null): void {
  if (mailboxUid) vaults.delete(mailboxUid);
  else vaults.clear();
  tellOthers({ op: 'lock', mailboxUid }, by);
}

function restartIdle(minutes: number): void {
  if (idleTimer) clearTimeout(idleTimer);
  idleTimer = vaults.size && minutes > 0 ? setTimeout(() => lockVaults(null, null), minutes * 60_000) : null;
}

/** A page went away (said goodbye, or its port closed): after the last one, the keys go after GRACE_MS. */
function leave(port: MessagePort): void {
  if (!ports.delete(port) || ports.size) return;
  lastPageTimer = setTimeout(() => vaults.clear(), GRACE_MS);
}

function handle(port: MessagePort, m: FromPage): void {
  switch (m.op) {
    case 'hello':
      if (lastPageTimer) clearTimeout(lastPageTimer);
      lastPageTimer = null;
      ports.add(port);
      port.postMessage({ op: 'all', vaults: [...vaults.values()] });
      return;
    case 'bye':
      leave(port);
      return;
    case 'put':
      vaults.set(m.vault.mailboxUid, m.vault);
      tellOthers({ op: 'put', vault: m.vault }, port);
      return;
    case 'lock':
      lockVaults(m.mailboxUid, port);
      return;
    case 'touch':
      restartIdle(m.minutes);
  }
}

scope.onconnect = (e: MessageEvent) => {
  const port = e.ports[0]!;
  port.onmessage = (ev: MessageEvent<FromPage>) => handle(port, ev.data);
  // Chromium tells when the page at the other end is gone, also without a goodbye (a crash).
  port.addEventListener('close', () => leave(port));
  port.start();
};
