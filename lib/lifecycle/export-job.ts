import { createHash, type Hash } from 'node:crypto';
import { createWriteStream, type WriteStream } from 'node:fs';
import { rename } from 'node:fs/promises';
import { Readable } from 'node:stream';
import yazl from 'yazl';
import {
  blobsOf,
  FolderModel,
  LabelModel,
  MailboxModel,
  mboxEntry,
  MessageModel,
  SYSTEM_FOLDERS,
  type Folder,
  type Mailbox,
  type Message,
} from '../mail/index.js';
import {
  CalendarEventModel,
  ContactModel,
  contactsToVcf,
  eventsToIcs,
  NoteModel,
  TaskListModel,
  TaskModel,
  type ContactData,
  type EventData,
} from '../pim/index.js';
import type { Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { exportPath, removeFile, tempPath } from './files.js';
import { MANIFEST_FORMAT, type Manifest, type ManifestFolder } from './manifest.js';
import type { ExportRequest } from './models.js';

const PAGE = 200;
const ROLE_ORDER = new Map(SYSTEM_FOLDERS.map((f, i) => [f.role as string, i]));

/** Reports progress and renews the lease; answers false when the job lost its record (deleted or taken over). */
export type Touch = (patch: Record<string, unknown>) => Promise<boolean>;

export class JobAborted extends Error {}

export interface ExportResult {
  archiveBytes: number;
  archiveSha256: string;
  folders: number;
  messages: number;
  calendarEvents: number;
  contacts: number;
}

/** Folder paths (names from the top), system folders first in their usual order, then by path. */
export function folderPaths(folders: Array<Row<Folder>>): Array<{ folder: Row<Folder>; path: string[] }> {
  const byUid = new Map(folders.map((f) => [f.uid, f]));
  const pathOf = (f: Row<Folder>): string[] => {
    const names: string[] = [];
    for (
      let cur: Row<Folder> | undefined = f, depth = 0;
      cur && depth < 70;
      cur = cur.parentUid ? byUid.get(cur.parentUid) : undefined, depth++
    )
      names.unshift(cur.name);
    return names;
  };
  return folders
    .map((folder) => ({ folder, path: pathOf(folder) }))
    .sort((a, b) => {
      const ra = ROLE_ORDER.get(a.folder.role ?? '') ?? 99;
      const rb = ROLE_ORDER.get(b.folder.role ?? '') ?? 99;
      return ra - rb || a.path.join('/').localeCompare(b.path.join('/'));
    });
}

const safeName = (path: string[]) =>
  path
    .join('-')
    .replace(/[^\w.-]+/g, '_')
    .slice(0, 80) || 'folder';

/** The export's message count, reported through touch at most once a second unless forced. */
interface Progress {
  done: number;
  report(force?: boolean): Promise<void>;
}

type LazyStream = (cb: (err: unknown, s: NodeJS.ReadableStream) => void) => void;

/** Counts exported messages against the total; throws JobAborted when the request was deleted or taken over. */
function progressOf(touch: Touch, total: number): Progress {
  let lastTouch = 0;
  const p: Progress = {
    done: 0,
    async report(force = false) {
      if (!force && Date.now() - lastTouch < 1000) return;
      lastTouch = Date.now();
      if (!(await touch({ progress: { done: p.done, total } }))) throw new JobAborted('the export request was deleted or taken over');
    },
  };
  return p;
}

/** yazl does not pass on errors of its input streams: a failing generator rejects `failed`, which fails the build. */
function guardedStreams(): { failed: Promise<never>; guarded: (gen: () => AsyncGenerator<Buffer>) => LazyStream } {
  let failure: ((e: unknown) => void) | undefined;
  const failed = new Promise<never>((_r, reject) => {
    failure = reject;
  });
  failed.catch(() => undefined);
  const guarded = (gen: () => AsyncGenerator<Buffer>) => (cb: (err: unknown, s: NodeJS.ReadableStream) => void) => {
    cb(
      null,
      Readable.from(
        (async function* () {
          try {
            yield* gen();
          } catch (e) {
            failure!(e);
          }
        })(),
      ),
    );
  };
  return { failed, guarded };
}

/** One folder's messages as mbox entries (raw bytes as stored), page by page; each is recorded in the folder's manifest entry. */
async function* folderMbox(
  deps: Deps,
  folderUid: string,
  entry: ManifestFolder,
  labelName: Map<string, string>,
  progress: Progress,
): AsyncGenerator<Buffer> {
  const repo = deps.store.repo<Message>(MessageModel);
  let last: string | null = null;
  for (;;) {
    const batch: Array<Row<Message>> = await repo.list({
      filter: { folderUid, ...(last ? { uid: { $gt: last } } : {}) },
      sort: [{ field: 'uid', dir: 'asc' }],
      limit: PAGE,
    });
    if (!batch.length) return;
    for (const m of batch) {
      last = m.uid;
      let raw: Buffer;
      try {
        raw = await blobsOf(deps).get(m.blobId);
      } catch {
        entry.missing += 1; // deleted meanwhile, or a damaged blob store: counted, never silently dropped
        continue;
      }
      yield mboxEntry(raw, m.fromAddress, new Date(m.date));
      entry.totalCount += 1;
      if (!m.seen) entry.unreadCount += 1;
      entry.messages.push({
        sha256: m.blobId,
        size: raw.length,
        seen: m.seen,
        flagged: m.flagged,
        answered: m.answered,
        forwarded: m.forwarded,
        draft: m.draft,
        labels: m.labels.flatMap((l) => (labelName.has(l) ? [labelName.get(l)!] : [])),
        smime: m.smime,
      });
      progress.done += 1;
      await progress.report();
    }
  }
}

/** Adds one lazily written mbox file per folder; returns the folders' manifest entries, filled as the files are written. */
function addFolders(
  deps: Deps,
  zip: yazl.ZipFile,
  folders: Array<{ folder: Row<Folder>; path: string[] }>,
  labelName: Map<string, string>,
  progress: Progress,
  guarded: (gen: () => AsyncGenerator<Buffer>) => LazyStream,
): ManifestFolder[] {
  return folders.map(({ folder, path }, i) => {
    const entry: ManifestFolder = {
      path,
      role: folder.role,
      file: `mail/${String(i + 1).padStart(3, '0')}-${safeName(path)}.mbox`,
      totalCount: 0,
      unreadCount: 0,
      missing: 0,
      messages: [],
    };
    zip.addReadStreamLazy(
      entry.file,
      guarded(() => folderMbox(deps, folder.uid, entry, labelName, progress)),
    );
    return entry;
  });
}

/** Adds calendar.ics, contacts.vcf, notes.json and tasks.json; returns how many events and contacts they hold. */
async function addPimFiles(deps: Deps, zip: yazl.ZipFile, box: Row<Mailbox>): Promise<{ events: number; contacts: number }> {
  const { store } = deps;
  const mailboxUid = box.uid;
  const events = await store
    .repo<EventData>(CalendarEventModel)
    .list({ filter: { mailboxUid }, sort: [{ field: 'start', dir: 'asc' }], limit: 100_000 });
  const contacts = await store
    .repo<ContactData>(ContactModel)
    .list({ filter: { mailboxUid }, sort: [{ field: 'fn', dir: 'asc' }], limit: 100_000 });
  zip.addBuffer(Buffer.from(eventsToIcs(events, box.name || box.address)), 'calendar.ics');
  zip.addBuffer(Buffer.from(contactsToVcf(contacts)), 'contacts.vcf');
  const strip = <T extends Record<string, unknown>>(rows: T[]) => rows.map(({ mailboxUid: _m, version: _v, ...rest }) => rest);
  const notes = await store.repo<Record<string, unknown>>(NoteModel).list({ filter: { mailboxUid }, limit: 100_000 });
  const taskLists = await store.repo<Record<string, unknown>>(TaskListModel).list({ filter: { mailboxUid }, limit: 100_000 });
  const tasks = await store.repo<Record<string, unknown>>(TaskModel).list({ filter: { mailboxUid }, limit: 100_000 });
  zip.addBuffer(Buffer.from(JSON.stringify(strip(notes), null, 2)), 'notes.json');
  zip.addBuffer(Buffer.from(JSON.stringify({ taskLists: strip(taskLists), tasks: strip(tasks) }, null, 2)), 'tasks.json');
  return { events: events.length, contacts: contacts.length };
}

/** Pipes the zip into the file, hashing and counting its bytes on the way; `written` settles when the file is complete. */
function pipeArchive(zip: yazl.ZipFile, out: WriteStream): { written: Promise<void>; sum: { bytes: number; hash: Hash } } {
  const sum = { bytes: 0, hash: createHash('sha256') };
  const written = new Promise<void>((resolve, reject) => {
    zip.outputStream.on('data', (c: Buffer) => {
      sum.hash.update(c);
      sum.bytes += c.length;
    });
    zip.outputStream.on('error', reject);
    zip.on('error', reject);
    out.on('error', reject);
    out.on('finish', resolve);
    zip.outputStream.pipe(out);
  });
  return { written, sum };
}

/**
 * Builds the archive of one mailbox (a zip): one mbox per folder (raw messages byte for byte, S/MIME
 * ciphertext as stored), calendar.ics, contacts.vcf, notes.json, tasks.json and manifest.json (the
 * folder tree, each message's sha256, size, flags and labels). Written to a temporary file and
 * renamed into data_dir/exports/<uid>.zip once complete.
 */
export async function buildExport(deps: Deps, req: Row<ExportRequest>, touch: Touch): Promise<ExportResult> {
  const { store } = deps;
  const mailboxUid = req.mailboxUid;
  const box = await store.repo<Mailbox>(MailboxModel).get(mailboxUid);
  if (!box) throw new Error('the mailbox no longer exists');
  const folders = folderPaths(await store.repo<Folder>(FolderModel).list({ filter: { mailboxUid }, limit: 100_000 }));
  const labels = await store.repo<{ name: string; color: string | null }>(LabelModel).list({ filter: { mailboxUid }, limit: 100_000 });
  const progress = progressOf(touch, await store.repo(MessageModel).count({ mailboxUid }));
  await progress.report(true);

  const zip = new yazl.ZipFile();
  const tmp = await tempPath(deps.config, 'exports');
  const out = createWriteStream(tmp, { mode: 0o640 });
  const { failed, guarded } = guardedStreams();
  const manifestFolders = addFolders(deps, zip, folders, new Map(labels.map((l) => [l.uid, l.name])), progress, guarded);
  const pim = await addPimFiles(deps, zip, box);
  // Last, so it describes what the mbox files really hold (a message deleted meanwhile is counted as missing).
  zip.addReadStreamLazy('manifest.json', (cb) => {
    const manifest: Manifest = {
      format: MANIFEST_FORMAT,
      version: 1,
      exportedAt: new Date().toISOString(),
      mailbox: { address: box.address, name: box.name },
      labels: labels.map((l) => ({ name: l.name, color: l.color })),
      folders: manifestFolders,
      calendar: { file: 'calendar.ics', events: pim.events },
      contacts: { file: 'contacts.vcf', contacts: pim.contacts },
    };
    cb(null, Readable.from([Buffer.from(JSON.stringify(manifest, null, 1))]));
  });
  zip.end();

  const { written, sum } = pipeArchive(zip, out);
  try {
    await Promise.race([written, failed]);
    await progress.report(true);
    await rename(tmp, exportPath(deps.config, req.uid));
  } catch (e) {
    out.destroy();
    await removeFile(tmp);
    throw e;
  }
  return {
    archiveBytes: sum.bytes,
    archiveSha256: sum.hash.digest('hex'),
    folders: folders.length,
    messages: progress.done,
    calendarEvents: pim.events,
    contacts: pim.contacts,
  };
}
