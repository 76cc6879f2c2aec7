import { createHash } from 'node:crypto';
import { ApiError } from '../errors/index.js';
import {
  fileMessage,
  folderFields,
  folderOf,
  FolderModel,
  FOLDER_ROLES,
  LabelModel,
  MailboxModel,
  MessageModel,
  parseMessage,
  storeRaw,
  wouldExceedQuota,
  type Folder,
  type FolderRole,
  type Message,
  type ParsedMessage,
} from '../mail/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { JobAborted, type Touch } from './export-job.js';
import { uploadPath } from './files.js';
import { restorePim } from './import-pim.js';
import { importItems, InputError, pimFiles, type SourceItem } from './import-sources.js';
import type { ManifestMessage } from './manifest.js';
import { emptyPimCounts, type ImportRequest, type PimCounts } from './models.js';

const REPORT_MAX = 500;
/** Largest calendar, contacts, notes or tasks file of a zip the import reads (it is parsed whole). */
const PIM_FILE_MAX = 64 * 1024 * 1024;
/** A message starts with a header field ("Name: value"); anything else is not RFC 5322 input. */
const HEADER_START = /^[\x21-\x39\x3b-\x7e]+[ \t]*:/;

export interface ImportCounts {
  bytesRead: number;
  imported: number;
  skipped: number;
  failed: number;
  foldersCreated: number;
  pim: PimCounts;
  report: Array<{ index: number; entry: string; reason: string }>;
}

type Flags = Partial<Pick<Message, 'seen' | 'flagged' | 'answered' | 'forwarded' | 'draft'>>;

/** Flags an mbox writer left in the message (Status/X-Status of mutt and others, X-Mozilla-Status of Thunderbird). */
export function headerFlags(parsed: ParsedMessage): Flags {
  const h = (name: string) => String(parsed.headers.get(name) ?? '');
  const status = h('status') + h('x-status');
  const moz = Number.parseInt(h('x-mozilla-status'), 16) || 0;
  return {
    seen: status.includes('R') || Boolean(moz & 0x1),
    answered: status.includes('A') || Boolean(moz & 0x2),
    flagged: status.includes('F') || Boolean(moz & 0x4),
  };
}

/** One import run: the mailbox, the folder the request chose, what it counted so far, and the folders and labels it resolved. */
interface ImportRun {
  deps: Deps;
  mailboxUid: string;
  /** Where a message goes when the manifest names no folder for it. */
  chosen: Row<Folder>;
  /** The idempotency keys' prefix: import:<request>: */
  prefix: string;
  counts: ImportCounts;
  /** A manifest folder (role and path) → the folder it resolved to. */
  folders: Map<string, Row<Folder>>;
  /** Label name (lower case) → its uid in the mailbox. */
  labels: Map<string, string>;
  /** Adds a line to the report (up to REPORT_MAX). */
  report(index: number, entry: string, reason: string): void;
}

const note = (x: ImportRun, item: SourceItem, reason: string) => x.report(item.index, item.entry, reason);

/** The folder the request chose (else the Inbox); gone meanwhile, the upload is refused. */
async function chosenFolder(deps: Deps, req: Row<ImportRequest>): Promise<Row<Folder>> {
  try {
    return await folderOf(deps.store, req.mailboxUid, req.folderUid ? { folderUid: req.folderUid } : { folderRole: 'inbox' });
  } catch {
    throw new InputError('the chosen folder no longer exists');
  }
}

/** The folder a message goes to: the chosen one, or the one its manifest names (by role, else by path). */
async function folderFor(x: ImportRun, target: SourceItem['target']): Promise<Row<Folder>> {
  if (!target) return x.chosen;
  const key = `${target.role ?? ''}\0${target.path.join('\0')}`;
  const hit = x.folders.get(key);
  if (hit) return hit;
  let f: Row<Folder> | null = null;
  if (target.role && (FOLDER_ROLES as readonly string[]).includes(target.role)) {
    f = await folderOf(x.deps.store, x.mailboxUid, { folderRole: target.role as FolderRole }).catch(() => null);
  }
  if (!f) f = await folderPath(x, target.path);
  x.folders.set(key, f);
  return f;
}

/** Finds each level by name (case-insensitively, like sibling names), creating what is missing. */
async function folderPath(x: ImportRun, path: string[]): Promise<Row<Folder>> {
  const { deps, mailboxUid } = x;
  const repo = deps.store.repo<Folder>(FolderModel);
  let parent: Row<Folder> | null = null;
  for (const raw of path) {
    const name = folderFields.name.safeParse(raw);
    if (!name.success) return parent ?? x.chosen;
    const siblings: Array<Row<Folder>> = await repo.list({
      filter: { mailboxUid, parentUid: parent ? parent.uid : null },
      limit: 10_000,
    });
    let f: Row<Folder> | undefined = siblings.find((s) => s.name.toLowerCase() === name.data.toLowerCase());
    if (!f) {
      f = await repo.create({
        mailboxUid,
        parentUid: parent ? parent.uid : null,
        name: name.data,
        role: null,
        unreadCount: 0,
        totalCount: 0,
        threadsReady: true,
      });
      x.counts.foldersCreated += 1;
      const { threadsReady: _internal, ...shown } = f;
      deps.events.publish([f.uid, mailboxUid], { type: 'folder', action: 'create', data: shown });
    }
    parent = f;
  }
  return parent ?? x.chosen;
}

/** The mailbox's uids of the labels a manifest names, creating those it does not have. */
async function labelUids(x: ImportRun, names: string[]): Promise<string[]> {
  const { mailboxUid } = x;
  const out: string[] = [];
  for (const name of names) {
    let uid = x.labels.get(name.toLowerCase());
    if (!uid) {
      const repo = x.deps.store.repo<{ mailboxUid: string; name: string; color: string | null }>(LabelModel);
      uid = (await repo.findOne({ mailboxUid, name }))?.uid ?? (await repo.create({ mailboxUid, name, color: null })).uid;
      x.labels.set(name.toLowerCase(), uid);
    }
    out.push(uid);
  }
  return out;
}

/** Why the message is a duplicate (by Message-ID, else raw sha256), or null when it is not. */
async function duplicate(x: ImportRun, parsed: ParsedMessage, sha: string, folder: Row<Folder>): Promise<string | null> {
  const { mailboxUid } = x;
  const id = parsed.fields.messageId;
  const same = await x.deps.store
    .repo<Message>(MessageModel)
    .list({ filter: id ? { mailboxUid, messageId: id } : { mailboxUid, blobId: sha }, limit: 100 });
  if (!same.some((m) => !(m.ingestKey ?? '').startsWith(x.prefix) || m.folderUid === folder.uid)) return null;
  return id
    ? `duplicate: Message-ID ${id} is already in the mailbox`
    : 'duplicate: the same message (no Message-ID) is already in the mailbox';
}

/** Counts one message as failed and reports why. */
function failed(x: ImportRun, item: SourceItem, reason: string): void {
  x.counts.failed += 1;
  note(x, item, reason);
}

/** The message parsed, or null (counted as failed) when it is not RFC 5322 input or cannot be parsed. */
async function parsedOf(x: ImportRun, item: SourceItem, raw: Buffer): Promise<ParsedMessage | null> {
  if (!raw.length || !HEADER_START.test(raw.subarray(0, 1000).toString('latin1'))) {
    failed(x, item, 'not an RFC 5322 message: it does not start with a header field');
    return null;
  }
  try {
    return await parseMessage(raw); // the one parse of this message; filing reuses it
  } catch (e) {
    failed(x, item, `cannot be parsed: ${(e as Error).message}`);
    return null;
  }
}

/** Imports one item: filed once (by its idempotency key), skipped as a duplicate, or reported as failed. */
async function importOne(x: ImportRun, item: SourceItem): Promise<void> {
  const { deps, mailboxUid, counts } = x;
  if (item.error || !item.raw) return failed(x, item, item.error ?? 'empty');
  const key = `${x.prefix}${item.index}`;
  if (await deps.store.repo<Message>(MessageModel).findOne({ mailboxUid, ingestKey: key })) {
    counts.imported += 1; // filed by an earlier run of this job (a worker died after filing it)
    return;
  }
  const raw = item.raw;
  const parsed = await parsedOf(x, item, raw);
  if (!parsed) return;
  const folder = await folderFor(x, item.target);
  const sha = createHash('sha256').update(raw).digest('hex');
  const dup = await duplicate(x, parsed, sha, folder);
  if (dup) {
    counts.skipped += 1;
    note(x, item, dup);
    return;
  }
  if (await wouldExceedQuota(deps, mailboxUid, raw.length)) return failed(x, item, 'the mailbox is over its quota');
  const meta: ManifestMessage | undefined = item.meta?.sha256 === sha ? item.meta : undefined;
  const flags: Flags = meta
    ? { seen: meta.seen, flagged: meta.flagged, answered: meta.answered, forwarded: meta.forwarded, draft: meta.draft }
    : headerFlags(parsed);
  const stored = await storeRaw(deps, raw);
  await fileMessage(deps, {
    mailboxUid,
    folderUid: folder.uid,
    raw: stored,
    parsed,
    flags,
    labels: meta ? await labelUids(x, meta.labels) : [],
    idempotencyKey: key,
  });
  counts.imported += 1;
}

/**
 * Runs one import: each message is parsed once, checked, and filed with the same filing path as
 * delivery (counts, quota, blob reference, events). Per message: a duplicate is skipped, bad input
 * is reported, the rest goes on. The idempotency key import:<request>:<position> makes a restarted
 * job file nothing twice.
 *
 * Duplicates, skipped by Message-ID: the mailbox already holds a message
 * with the same Message-ID that this import did not file, or this import already filed one with it
 * into the same folder (so copies an export kept in two folders both come back). A message without
 * a Message-ID is compared by its raw sha256 the same way.
 */
export async function runImport(deps: Deps, req: Row<ImportRequest>, touch: Touch): Promise<ImportCounts> {
  const { store, config } = deps;
  const mailboxUid = req.mailboxUid;
  if (!(await store.repo(MailboxModel).get(mailboxUid))) throw new InputError('the mailbox no longer exists');
  const chosen = await chosenFolder(deps, req);
  const counts: ImportCounts = { bytesRead: 0, imported: 0, skipped: 0, failed: 0, foldersCreated: 0, pim: emptyPimCounts(), report: [] };
  const report = (index: number, entry: string, reason: string) => {
    if (counts.report.length < REPORT_MAX) counts.report.push({ index, entry, reason });
  };
  const x: ImportRun = { deps, mailboxUid, chosen, prefix: `import:${req.uid}:`, counts, folders: new Map(), labels: new Map(), report };
  let lastTouch = 0;
  const progress = async (force = false) => {
    if (!force && Date.now() - lastTouch < 1000) return;
    lastTouch = Date.now();
    if (!(await touch({ ...counts }))) throw new JobAborted('the import request was deleted or taken over');
  };

  const limits = {
    maxMessageBytes: config.get('mail:mailbox_import:max_message_bytes'),
    maxUnpackedBytes: config.get('mail:mailbox_import:max_unpacked_bytes'),
  };
  for await (const item of importItems(uploadPath(config, req.uid), req, limits, (n) => {
    counts.bytesRead += n;
  })) {
    try {
      await importOne(x, item);
    } catch (e) {
      if (e instanceof JobAborted || !(e instanceof ApiError)) throw e;
      failed(x, item, e.message); // a refusal of this message by the mail layer (for instance a folder removed meanwhile)
    }
    await progress();
  }
  if (req.format === 'zip') {
    const files = pimFiles(uploadPath(config, req.uid), req.useManifest, {
      maxFileBytes: PIM_FILE_MAX,
      maxUnpackedBytes: limits.maxUnpackedBytes,
    });
    await restorePim(deps, mailboxUid, req.uid, files, { counts: counts.pim, note: report, progress: () => progress() });
  }
  await progress(true);
  return counts;
}
