// The local search index of decrypted mail in memory (issue #32): one MiniSearch index per unlocked
// mailbox over the subject, the sender, the recipients and the text of each encrypted message the
// page opened, with what a result row shows (subject, folder, date, whether it has files). Read from
// IndexedDB when the mailbox is unlocked (sealed there with the index key: local-index-store.ts),
// saved again every few seconds while it grows, and dropped from memory when the keys are locked.
// Loaded with the first unlock: MiniSearch is not part of the mail page's first load.
import MiniSearch, { type AsPlainObject, type Options } from 'minisearch';
import { keysOf, type UnlockedVault } from './keyring.js';
import type { OpenedMail } from './smime-mail.js';
import { readIndex, writeIndex } from './local-index-store.js';
import { setStatus } from './local-index-state.js';
import { runCatchUp } from './local-index-catch-up.js';

/** The stored message an opened message belongs to (its record's fields). */
export interface IndexedMessage {
  uid: string;
  folderUid: string;
  date: string;
  fromAddress: string;
}

/** What the views show of an indexed message without opening it again. */
export interface LocalDoc {
  subject: string;
  folderUid: string;
  date: string;
  /** It has attachments (the server cannot know: the record says none). */
  files: boolean;
}

export interface LocalHit {
  uid: string;
  subject: string;
  score: number;
}

interface Doc {
  uid: string;
  subject: string;
  from: string;
  to: string;
  text: string;
}

interface Saved {
  v: number;
  index: AsPlainObject;
  docs: Array<[string, LocalDoc]>;
  unreadable: string[];
}

const FORMAT = 1;
/** Text indexed per message (a long message's first 200 000 characters). */
const TEXT_MAX = 200_000;
/** Saves while the index grows: no more often than this, nor than ten times what the last save took (under a tenth of the time). */
const SAVE_EVERY_MS = 5_000;
/** A saved index up to this size (characters) is read back at once; a larger one in slices, so the page stays responsive. */
const LOAD_AT_ONCE = 4_000_000;
const MAX_HITS = 500;

// Words as the server's search takes them: each word, or the start of one, case ignored; all of them.
const OPTIONS: Options<Doc> = {
  idField: 'uid',
  fields: ['subject', 'from', 'to', 'text'],
  storeFields: [],
  searchOptions: { boost: { subject: 3, from: 2, to: 1.5 }, prefix: (term) => term.length > 1, combineWith: 'AND' },
};

const person = (p: { name?: string; address: string } | null | undefined) => (p ? `${p.name ?? ''} ${p.address}` : '');

/** The text of an HTML-only message: its words, through an inert document (no script runs, nothing loads). */
const textOfHtml = (html: string) => new DOMParser().parseFromString(html, 'text/html').body.textContent ?? '';

function docOf(message: IndexedMessage, opened: OpenedMail): Doc {
  const text = opened.text || (opened.html ? textOfHtml(opened.html) : '');
  return {
    uid: message.uid,
    subject: opened.subject,
    from: person(opened.from) || message.fromAddress,
    to: [...opened.to, ...opened.cc].map(person).join(' '),
    text: `${text.slice(0, TEXT_MAX)}\n${opened.files.map((f) => f.name).join(' ')}`,
  };
}

async function loadSearch(index: AsPlainObject, size: number): Promise<MiniSearch<Doc> | null> {
  try {
    return size <= LOAD_AT_ONCE ? MiniSearch.loadJS(index, OPTIONS) : await MiniSearch.loadJSAsync(index, OPTIONS);
  } catch {
    return null;
  }
}

function parseSaved(text: string): Saved | null {
  try {
    const saved = JSON.parse(text) as Saved;
    return saved.v === FORMAT && saved.index && Array.isArray(saved.docs) ? saved : null;
  } catch {
    return null;
  }
}

/** One mailbox's index, for as long as the keys it was opened with stay unlocked. */
export class MailboxIndex {
  readonly docs = new Map<string, LocalDoc>();
  /** Messages these keys could not open: not tried again until the vault changes. */
  readonly unreadable = new Set<string>();
  /** The running catch-up, and when the last one ended (ms). */
  catching: Promise<void> | null = null;
  caughtUpAt = 0;
  #closed = false;
  #dirty = false;
  #timer: ReturnType<typeof setTimeout> | null = null;
  #saving: Promise<void> | null = null;
  #saveCost = 0;
  #search: MiniSearch<Doc>;

  constructor(
    public keys: UnlockedVault,
    search: MiniSearch<Doc>,
  ) {
    this.#search = search;
  }

  /** Its keys are still the unlocked ones: it may be searched, grown and saved. */
  get live(): boolean {
    return !this.#closed && keysOf(this.keys.mailboxUid) === this.keys;
  }

  /**
   * Reads the saved index of the mailbox, or starts an empty one: none saved yet, or one sealed under
   * an earlier vault generation or damaged. `live`: the keys are still unlocked (else nothing is read).
   */
  static async load(keys: UnlockedVault, live: () => boolean): Promise<MailboxIndex> {
    const started = performance.now();
    const saved = await readIndex(keys.mailboxUid, keys.indexKey, live).catch(() => null);
    const parsed = saved && parseSaved(saved.text);
    const search = parsed ? await loadSearch(parsed.index, saved.text.length) : null;
    const index = new MailboxIndex(keys, search ?? new MiniSearch(OPTIONS));
    if (parsed && search) {
      for (const [uid, doc] of parsed.docs) index.docs.set(uid, doc);
      for (const uid of parsed.unreadable ?? []) index.unreadable.add(uid);
    }
    performance.measure('svcmail:local-index:load', { start: started, detail: { documents: index.docs.size, bytes: saved?.bytes ?? 0 } });
    return index;
  }

  /** Known to the index: indexed, or found unreadable with these keys. */
  has(uid: string): boolean {
    return this.docs.has(uid) || this.unreadable.has(uid);
  }

  /** Adds an opened message (once: a message already indexed is left as it is). */
  add(message: IndexedMessage, opened: OpenedMail): boolean {
    if (this.#closed || this.docs.has(message.uid)) return false;
    this.#search.add(docOf(message, opened));
    this.docs.set(message.uid, {
      subject: opened.subject,
      folderUid: message.folderUid,
      date: message.date,
      files: opened.files.length > 0,
    });
    this.unreadable.delete(message.uid);
    this.#changed();
    return true;
  }

  markUnreadable(uid: string): void {
    this.unreadable.add(uid);
    this.#changed();
  }

  /** A message that is gone from the mailbox: out of the index. */
  drop(uid: string): void {
    if (this.docs.delete(uid)) this.#search.discard(uid);
    this.unreadable.delete(uid);
    this.#changed();
  }

  /** A message moved to another folder (its date is the record's). */
  moved(uid: string, folderUid: string, date: string): void {
    const doc = this.docs.get(uid);
    if (!doc || (doc.folderUid === folderUid && doc.date === date)) return;
    this.docs.set(uid, { ...doc, folderUid, date });
    this.#changed();
  }

  uids(): string[] {
    return [...this.docs.keys(), ...this.unreadable];
  }

  search(query: string): LocalHit[] {
    if (this.#closed) return [];
    return this.#search
      .search(query)
      .slice(0, MAX_HITS)
      .map((r) => ({ uid: String(r.id), subject: this.docs.get(String(r.id))?.subject ?? '', score: r.score }));
  }

  #changed(): void {
    if (this.#closed) return;
    this.#dirty = true;
    setStatus(this.keys.mailboxUid, { indexed: this.docs.size, unreadable: this.unreadable.size });
    this.saveSoon();
  }

  /** Saves within a few seconds (changes coming in a burst make one save). */
  saveSoon(): void {
    if (this.#timer || this.#closed) return;
    this.#timer = setTimeout(
      () => {
        this.#timer = null;
        void this.flush();
      },
      Math.max(SAVE_EVERY_MS, this.#saveCost * 10),
    );
  }

  /** Saves now what is not saved yet (after a save already running). */
  async flush(): Promise<void> {
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    while (this.#saving) await this.#saving;
    if (!this.#dirty || !this.live) return;
    this.#dirty = false;
    this.#saving = this.#write().finally(() => (this.#saving = null));
    await this.#saving;
  }

  async #write(): Promise<void> {
    const started = performance.now();
    const saved: Saved = { v: FORMAT, index: this.#search.toJSON(), docs: [...this.docs], unreadable: [...this.unreadable] };
    try {
      const bytes = await writeIndex(this.keys.mailboxUid, this.keys.indexKey, JSON.stringify(saved), () => this.live);
      if (bytes !== null) performance.measure('svcmail:local-index:save', { start: started, detail: { documents: this.docs.size, bytes } });
    } catch (e) {
      this.#dirty = true;
      setStatus(this.keys.mailboxUid, { problem: `The search index could not be saved on this device (${(e as Error).message}).` });
    }
    this.#saveCost = performance.now() - started;
  }

  /** Forgets everything (the keys were locked): nothing of it is saved any more. */
  close(): void {
    this.#closed = true;
    if (this.#timer) clearTimeout(this.#timer);
    this.#timer = null;
    this.docs.clear();
    this.unreadable.clear();
    this.#search = new MiniSearch(OPTIONS);
  }
}

interface Held {
  keys: UnlockedVault;
  ready: Promise<MailboxIndex>;
  index: MailboxIndex | null;
}

const held = new Map<string, Held>();

/** The index of an unlocked mailbox, read from IndexedDB the first time. */
export function openIndex(keys: UnlockedVault): Promise<MailboxIndex> {
  const mailboxUid = keys.mailboxUid;
  const h = held.get(mailboxUid);
  // Unlocked again with the same vault generation: the same master key, so the same index key.
  if (h && (h.keys === keys || h.keys.generation === keys.generation)) {
    h.keys = keys;
    if (h.index) h.index.keys = keys;
    return h.ready;
  }
  if (h) closeIndexes(mailboxUid);
  setStatus(mailboxUid, { address: keys.address, phase: 'loading', indexed: 0, todo: 0, done: 0, unreadable: 0, problem: null });
  const entry: Held = { keys, index: null, ready: Promise.resolve(null as never) };
  const live = () => held.get(mailboxUid) === entry && keysOf(mailboxUid) === entry.keys;
  held.set(mailboxUid, entry);
  entry.ready = MailboxIndex.load(keys, live).then((index) => {
    index.keys = entry.keys;
    entry.index = index;
    if (live()) setStatus(mailboxUid, { phase: 'ready', indexed: index.docs.size, unreadable: index.unreadable.size });
    else index.close(); // locked while it was read
    return index;
  });
  return entry.ready;
}

/** The mailbox's index if it is open and its keys unlocked (null while it is read). */
export function indexOf(mailboxUid: string): MailboxIndex | null {
  const index = held.get(mailboxUid)?.index ?? null;
  return index?.live ? index : null;
}

/** The keys of one mailbox (or of all) were locked: their indexes leave memory. */
export function closeIndexes(mailboxUid: string | null): void {
  for (const [uid, h] of held) {
    if (mailboxUid !== null && uid !== mailboxUid) continue;
    held.delete(uid);
    h.index?.close();
    void h.ready.then((index) => index.close()).catch(() => undefined);
    setStatus(uid, null);
  }
}

/** A vault was unlocked: its index is read, then catches up with the encrypted mail it does not hold yet. */
export async function unlocked(keys: UnlockedVault): Promise<void> {
  if (keysOf(keys.mailboxUid) !== keys) return;
  const index = await openIndex(keys);
  if (index.live) await runCatchUp(index);
}

export { runCatchUp, STALE_MS } from './local-index-catch-up.js';
