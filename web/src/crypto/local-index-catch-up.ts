// The local search index catching up with the mailbox (issue #32), after each unlock and now and
// then while the keys stay unlocked: it reads the list of the mailbox's encrypted messages, drops the
// messages that are gone, then fetches the raw source of each one it does not hold yet, newest first,
// opens it with the unlocked keys and indexes it — a few at a time, so the network and the decryption
// overlap. It stops when the keys are locked. Its progress is the mailbox's index status.
import { api, ApiFailure } from '../shared/api.js';
import type { IndexedMessage, MailboxIndex } from './local-index-engine.js';
import { setStatus } from './local-index-state.js';
import { loadMailCrypto } from './use-vault.js';

const LIST_PAGE = 500;
/** Messages fetched and opened at once. */
const PARALLEL = 4;
/** A search after this long since the last catch-up starts another (mail came meanwhile). */
export const STALE_MS = 60_000;

type OpenMail = Awaited<ReturnType<typeof loadMailCrypto>>['openMail'];

/** Every encrypted message of the mailbox (records: uid, folder, date, sender), newest first; null once the keys are locked. */
async function listEncrypted(mailboxUid: string, live: () => boolean): Promise<Map<string, IndexedMessage> | null> {
  const all = new Map<string, IndexedMessage>();
  for (let page = 0; ; page++) {
    if (!live()) return null;
    const rows = await api<IndexedMessage[]>(
      `/api/mail/messages?mailboxUid=${encodeURIComponent(mailboxUid)}&smime=encrypted&sort=-date&limit=${LIST_PAGE}&page=${page}`,
    );
    for (const r of rows) all.set(r.uid, { uid: r.uid, folderUid: r.folderUid, date: r.date, fromAddress: r.fromAddress });
    if (rows.length < LIST_PAGE) return all;
  }
}

/** The raw source of a message; null when it is gone. */
async function rawOf(uid: string): Promise<string | null> {
  const res = await fetch(`/api/mail/messages/${encodeURIComponent(uid)}/raw`, { credentials: 'same-origin' });
  if (res.status === 404) return null;
  if (!res.ok) throw new ApiFailure(res.status, await res.json().catch(() => null));
  return res.text();
}

/** Where a catch-up's time went (ms, summed over the messages opened side by side): for the bench's measure. */
interface Spent {
  fetch: number;
  open: number;
  index: number;
}

/** Fetches, opens and indexes one message; one these keys cannot open is noted as such. */
async function indexOne(index: MailboxIndex, m: IndexedMessage, openMail: OpenMail, spent: Spent): Promise<void> {
  let t = performance.now();
  const raw = await rawOf(m.uid);
  spent.fetch += performance.now() - t;
  if (raw === null) return index.drop(m.uid);
  if (!index.live) return;
  t = performance.now();
  const opened = await openMail(raw, index.keys, m.fromAddress).catch(() => null);
  spent.open += performance.now() - t;
  if (!index.live) return;
  t = performance.now();
  if (opened) index.add(m, opened);
  else index.markUnreadable(m.uid);
  spent.index += performance.now() - t;
}

/** Drops what is no longer in the mailbox and follows moves; answers the messages still to index. */
function reconcile(index: MailboxIndex, present: Map<string, IndexedMessage>): IndexedMessage[] {
  for (const uid of index.uids()) {
    const m = present.get(uid);
    if (!m) index.drop(uid);
    else index.moved(uid, m.folderUid, m.date);
  }
  return [...present.values()].filter((m) => !index.has(m.uid));
}

async function catchUp(index: MailboxIndex): Promise<void> {
  const mailboxUid = index.keys.mailboxUid;
  const live = () => index.live;
  const started = performance.now();
  setStatus(mailboxUid, { phase: 'catching-up', todo: 0, done: 0, problem: null });
  const present = await listEncrypted(mailboxUid, live);
  if (!present) return;
  const todo = reconcile(index, present);
  setStatus(mailboxUid, { todo: todo.length });
  const { openMail } = todo.length ? await loadMailCrypto() : { openMail: null as unknown as OpenMail };
  let next = 0;
  let done = 0;
  const spent: Spent = { fetch: 0, open: 0, index: 0 };
  const worker = async () => {
    while (live() && next < todo.length) {
      await indexOne(index, todo[next++], openMail, spent);
      setStatus(mailboxUid, { done: ++done });
    }
  };
  await Promise.all(Array.from({ length: Math.min(PARALLEL, todo.length) }, worker));
  await index.flush();
  if (!live()) return;
  setStatus(mailboxUid, { phase: 'ready' });
  performance.measure('svcmail:local-index:catch-up', {
    start: started,
    detail: { mailboxUid, opened: done, indexed: index.docs.size, unreadable: index.unreadable.size, spent },
  });
}

const describe = (e: unknown) =>
  e instanceof ApiFailure ? `${e.message}${e.code ? ` (${e.code})` : ''}` : 'the page could not reach the server or load its code';

/** Starts a catch-up unless one runs (then answers that one). */
export function runCatchUp(index: MailboxIndex): Promise<void> {
  index.catching ??= catchUp(index)
    .catch(async (e: unknown) => {
      await index.flush();
      if (index.live)
        setStatus(index.keys.mailboxUid, { phase: 'failed', problem: `Encrypted mail could not all be indexed: ${describe(e)}.` });
    })
    .finally(() => {
      index.catching = null;
      index.caughtUpAt = Date.now();
    });
  return index.catching;
}
