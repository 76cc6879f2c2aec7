// The search's encrypted mail (issue #32): the server cannot look into it, the page's local index can
// once the mailbox's keys are unlocked. Its hits are fetched as message records (so they show like
// the server's) and filtered as the server filters; a locked mailbox says how many encrypted messages
// were left out and offers to unlock.
import { useEffect, useState } from 'react';
import { useUnlocked } from '../../crypto/keyring.js';
import { localDoc, searchLocal, useIndexStatus, type IndexStatus } from '../../crypto/local-index.js';
import { Unlock } from '../../crypto/Unlock.js';
import { api, countOf } from '../../shared/api.js';
import type { Mailbox, Message } from '../types.js';
import { localWords, matchesLocal, type SearchForm } from './query.js';

/** Records asked for at once (their uids make the URL). */
const CHUNK = 100;

export interface LocalResults {
  /** The keys are unlocked: encrypted mail was searched. */
  unlocked: boolean;
  /** The encrypted messages found; null while the search runs. */
  rows: Message[] | null;
  /** Locked: how many encrypted messages the search could not look into. */
  notSearched: number;
  status: IndexStatus | null;
}

async function recordsOf(mailboxUid: string, uids: string[]): Promise<Message[]> {
  const chunks: string[][] = [];
  for (let i = 0; i < uids.length; i += CHUNK) chunks.push(uids.slice(i, i + CHUNK));
  const pages = await Promise.all(
    chunks.map((c) =>
      api<Message[]>(
        `/api/mail/messages?${new URLSearchParams([['mailboxUid', mailboxUid], ...c.map((u) => ['uid', u]), ['limit', String(CHUNK)]])}`,
      ),
    ),
  );
  return pages.flat();
}

const encryptedCount = (mailboxUid: string) => countOf(`/api/mail/messages?mailboxUid=${encodeURIComponent(mailboxUid)}&smime=encrypted`);

/** The local index's answer to a search form: asked again when the keys are unlocked and each time a catch-up ends. */
export function useLocalResults(mailboxUid: string, form: SearchForm): LocalResults {
  const keys = useUnlocked(mailboxUid);
  const status = useIndexStatus(mailboxUid);
  const words = localWords(form);
  const [rows, setRows] = useState<Message[] | null>(null);
  const [notSearched, setNotSearched] = useState(0);
  // A new answer once the index settles (read, or caught up): -1 while it is being read or grows.
  const settled = status && (status.phase === 'ready' || status.phase === 'failed') ? status.indexed : -1;
  useEffect(() => {
    let live = true;
    if (!words) setRows([]);
    else if (!keys) {
      setRows([]);
      encryptedCount(mailboxUid).then(
        (n) => live && setNotSearched(n),
        () => undefined,
      );
    } else
      searchLocal(mailboxUid, words)
        .then((hits) =>
          recordsOf(
            mailboxUid,
            hits.map((h) => h.uid),
          ),
        )
        .then(
          (found) => live && setRows(found.filter((m) => matchesLocal(form, m, localDoc(mailboxUid, m.uid)))),
          () => live && setRows([]),
        );
    return () => {
      live = false;
    };
  }, [mailboxUid, form, words, keys, settled]);
  return { unlocked: Boolean(keys), rows, notSearched: keys ? 0 : notSearched, status };
}

/** The server's results and the local index's, once each, newest first. */
export function merged(server: Message[], local: Message[]): Message[] {
  const seen = new Set(server.map((m) => m.uid));
  const all = [...server, ...local.filter((m) => !seen.has(m.uid) && seen.add(m.uid))];
  return all.sort((a, b) => Date.parse(b.date) - Date.parse(a.date) || (a.uid < b.uid ? 1 : a.uid > b.uid ? -1 : 0));
}

const plural = (n: number, one: string) => `${n} ${one}${n === 1 ? '' : 's'}`;

/** What the results say about encrypted mail: searched (and how far its index is), or left out while the keys are locked. */
export function localNote(form: SearchForm, local: LocalResults): string {
  if (!localWords(form)) return '';
  const s = local.status;
  if (local.unlocked && s?.phase === 'catching-up')
    return ` Encrypted mail was searched too, while it is being indexed (${s.done} of ${s.todo}): more of it may match.`;
  if (local.unlocked && s?.phase === 'loading') return ' Encrypted mail is being read from this device; search again in a moment.';
  if (local.unlocked) return ` Encrypted mail was searched too (${plural(s?.indexed ?? 0, 'message')} indexed on this device).`;
  if (local.notSearched) return ` ${plural(local.notSearched, 'encrypted message')} not searched: unlock your keys to include them.`;
  return '';
}

/** The unlock form for a locked mailbox with encrypted mail, folded away until asked for. */
export function UnlockToSearch({ mailboxUid }: { mailboxUid: string }) {
  const [box, setBox] = useState<Mailbox | null>(null);
  useEffect(() => {
    api<Mailbox>(`/api/mail/mailboxes/${encodeURIComponent(mailboxUid)}`).then(setBox, () => undefined);
  }, [mailboxUid]);
  if (!box) return null;
  return (
    <details className="unlock-to-search">
      <summary>Unlock to search encrypted mail</summary>
      <Unlock
        mailboxUid={box.uid}
        address={box.address}
        why="Encrypted mail is searched on this device once your keys are unlocked."
        quiet
      />
    </details>
  );
}
