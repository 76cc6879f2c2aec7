// Address suggestions while typing a recipient: people the user wrote to (Sent Items), the address
// book (contacts), then the directory (every mailbox and list of the deployment).
import { api } from '../../shared/api.js';
import type { Recipient } from './addresses.js';

const MAX = 8;

interface Sent {
  to: Recipient[];
  cc: Recipient[];
}
interface Contact {
  fn: string;
  emails: Array<{ value: string }>;
}

/** Whether a word of the name, or the address, starts with what was typed. */
const matches = (r: Recipient, q: string): boolean =>
  r.address.toLowerCase().startsWith(q) ||
  r.name
    .toLowerCase()
    .split(/\s+/)
    .some((w) => w.startsWith(q));

/** The mailbox's known people (correspondents first, then contacts), read once per compose view. */
async function knownPeople(mailboxUid: string, sentUid: string | null): Promise<Recipient[]> {
  const box = encodeURIComponent(mailboxUid);
  const [sent, contacts] = await Promise.all([
    sentUid ? api<Sent[]>(`/api/mail/messages?folderUid=${encodeURIComponent(sentUid)}&sort=-date&limit=200`) : Promise.resolve([]),
    api<Contact[]>(`/api/mail/contacts?mailboxUid=${box}&limit=1000`),
  ]);
  return [...sent.flatMap((m) => [...m.to, ...m.cc]), ...contacts.flatMap((c) => c.emails.map((e) => ({ address: e.value, name: c.fn })))];
}

/** A suggester for one compose view: up to eight recipients for what was typed, each address once. */
export function suggester(mailboxUid: string, sentUid: string | null): (typed: string) => Promise<Recipient[]> {
  let known: Promise<Recipient[]> | null = null;
  return async (typed) => {
    const q = typed.trim().toLowerCase();
    if (!q) return [];
    known ??= knownPeople(mailboxUid, sentUid).catch(() => []);
    const [mine, directory] = await Promise.all([
      known,
      api<Recipient[]>(`/api/mail/directory?q=${encodeURIComponent(q)}&limit=${MAX}`).catch(() => []),
    ]);
    const seen = new Set<string>();
    const out: Recipient[] = [];
    for (const r of [...mine.filter((r) => matches(r, q)), ...directory]) {
      const key = r.address.toLowerCase();
      if (seen.has(key)) continue;
      seen.add(key);
      out.push({ address: r.address, name: r.name });
      if (out.length === MAX) break;
    }
    return out;
  };
}
