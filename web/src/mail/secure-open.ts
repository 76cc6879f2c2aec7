// An S/MIME message opened in the page: its raw source decrypted with the mailbox's unlocked key
// (or only verified when it is signed), kept while the keys stay unlocked so that the reading pane,
// a reply and a forward decrypt it once.
import { api, Problem } from '../shared/api.js';
import { keysOf, onLock } from '../crypto/keyring.js';
import { indexOpened } from '../crypto/local-index.js';
import type { OpenedMail } from '../crypto/smime-mail.js';
import { loadMailCrypto, vaultPath } from '../crypto/use-vault.js';
import type { Message } from './types.js';

/** An opened message and the header block of what is stored (a forward as attachment keeps its headers). */
export interface Opened {
  mail: OpenedMail;
  head: string;
}

/** What was opened, by message uid: dropped when the keys lock. */
const opened = new Map<string, Opened>();
onLock(() => opened.clear());

/** The service's CA certificates (signatures chaining to them are trusted), read from the vault when no key is unlocked. */
const trustedOf = (mailboxUid: string): Promise<string[]> =>
  api<{ caCertificates?: string[] }>(vaultPath(mailboxUid)).then(
    (v) => v.caCertificates ?? [],
    () => [],
  );

/** The message opened (decrypted when the mailbox's keys are unlocked, its signature checked), once while the keys stay unlocked. */
export async function openWithHead(message: Message): Promise<Opened> {
  const hit = opened.get(message.uid);
  if (hit) return hit;
  const res = await fetch(`/api/mail/messages/${encodeURIComponent(message.uid)}/raw`, { credentials: 'same-origin' });
  if (!res.ok) throw new Problem(`The message could not be read (HTTP ${res.status}).`);
  const raw = await res.text();
  const keys = keysOf(message.mailboxUid);
  const trusted = keys?.caCertificates ?? (await trustedOf(message.mailboxUid));
  const mail = await (await loadMailCrypto()).openMail(raw, keys, { from: message.fromAddress, subject: message.subject }, trusted);
  const entry = { mail, head: raw.slice(0, Math.max(0, raw.search(/\r?\n\r?\n/))) };
  // Kept only when it was decrypted with these keys (a locked read is checked again after the unlock).
  if (keys || message.smime !== 'encrypted') opened.set(message.uid, entry);
  // The local search index learns what was just decrypted (it ignores mail that was not encrypted).
  if (keys) void indexOpened(keys, message, mail).catch(() => undefined);
  return entry;
}

export const openOnce = async (message: Message): Promise<OpenedMail> => (await openWithHead(message)).mail;
