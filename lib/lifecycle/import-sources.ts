import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import yauzl from 'yauzl';
import { manifestSchema, type Manifest, type ManifestFolder, type ManifestMessage } from './manifest.js';
import { splitMbox } from '../mail/index.js';
import type { ImportRequest } from './models.js';

export interface ImportLimits {
  maxMessageBytes: number;
  maxUnpackedBytes: number;
}

/** One message of an upload (or the reason it cannot be one), in upload order. */
export interface SourceItem {
  /** Position across the whole upload (0-based); stable, so a restarted job recognises its work. */
  index: number;
  /** Where it came from: "message 3", "mail/001-Inbox.mbox #2", "old/mail.eml". */
  entry: string;
  raw?: Buffer;
  error?: string;
  /** The folder an export's manifest names for it; absent: the folder the request chose. */
  target?: { path: string[]; role: string | null };
  /** Flags and labels the manifest kept for it (applied when its sha256 matches). */
  meta?: ManifestMessage;
}

export class InputError extends Error {}

const MANIFEST_MAX = 256 * 1024 * 1024;
const skippedName = (name: string) => name.endsWith('/') || name.startsWith('__MACOSX/') || /(^|\/)\./.test(name);

function readAll(stream: Readable, max: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const parts: Buffer[] = [];
    let n = 0;
    stream.on('data', (c: Buffer) => {
      n += c.length;
      if (n > max) stream.destroy(new InputError(`an entry is larger than ${max} bytes`));
      else parts.push(c);
    });
    stream.on('end', () => resolve(Buffer.concat(parts)));
    stream.on('error', reject);
  });
}

async function* fromMbox(
  stream: AsyncIterable<Buffer>,
  name: string,
  limits: ImportLimits,
  first: number,
  target?: SourceItem['target'],
  metas?: ManifestMessage[],
): AsyncGenerator<SourceItem> {
  let k = 0;
  try {
    for await (const item of splitMbox(stream, limits.maxMessageBytes)) {
      const meta = metas?.[k];
      const base = { index: first + k, entry: `${name} #${k + 1}`, ...(target ? { target } : {}), ...(meta ? { meta } : {}) };
      k += 1;
      if ('error' in item) {
        yield { ...base, error: item.error };
        continue;
      }
      // The export wrote a line end after a message that had none; the manifest's size takes it back off.
      const raw =
        meta && item.raw.length === meta.size + 1 && item.raw[item.raw.length - 1] === 0x0a ? item.raw.subarray(0, meta.size) : item.raw;
      yield { ...base, raw };
    }
  } catch (e) {
    if (e instanceof Error && e.message.startsWith('not an mbox file')) throw new InputError(`${name}: ${e.message}`);
    throw e;
  }
}

/** Opens an uploaded zip and lists its entries (a damaged zip is the uploader's mistake). */
async function openZip(file: string): Promise<{ zip: yauzl.ZipFile; entries: yauzl.Entry[] }> {
  let zip: yauzl.ZipFile;
  try {
    zip = await yauzl.openPromise(file, {
      lazyEntries: true,
      autoClose: false,
      validateEntrySizes: true,
      strictFileNames: false,
      decodeStrings: true,
    });
  } catch (e) {
    throw new InputError(`not a readable zip file: ${(e as Error).message}`);
  }
  const entries: yauzl.Entry[] = [];
  try {
    await new Promise<void>((resolve, reject) => {
      zip.on('entry', (e: yauzl.Entry) => {
        entries.push(e);
        zip.readEntry();
      });
      zip.on('end', resolve);
      zip.on('error', reject);
      zip.readEntry();
    });
  } catch (e) {
    zip.close();
    throw new InputError(`not a readable zip file: ${(e as Error).message}`);
  }
  return { zip, entries };
}

const tooLarge = (limits: ImportLimits) => `larger than mail:mailbox_import:max_message_bytes (${limits.maxMessageBytes} bytes)`;

/** An upload that is one .eml: one message, unless it is over the size limit. */
async function* emlItems(file: string, limits: ImportLimits, onBytes: (n: number) => void): AsyncGenerator<SourceItem> {
  const size = (await stat(file)).size;
  onBytes(size);
  yield size > limits.maxMessageBytes
    ? { index: 0, entry: 'message 1', error: tooLarge(limits) }
    : { index: 0, entry: 'message 1', raw: await readFile(file) };
}

/** An upload that is one mbox file: its messages as it streams in, counting the bytes read. */
async function* mboxItems(file: string, limits: ImportLimits, onBytes: (n: number) => void): AsyncGenerator<SourceItem> {
  const stream = createReadStream(file, { highWaterMark: 256 * 1024 });
  const counted = (async function* () {
    for await (const c of stream) {
      onBytes((c as Buffer).length);
      yield c as Buffer;
    }
  })();
  try {
    yield* fromMbox(counted, 'mbox', limits, 0);
  } finally {
    stream.destroy();
  }
}

/** The zip's export manifest when it has one, parsed; a manifest that does not parse is the uploader's mistake. */
async function readManifest(zip: yauzl.ZipFile, entries: yauzl.Entry[]): Promise<Manifest | null> {
  const manifestEntry = entries.find((e) => e.fileName === 'manifest.json');
  if (!manifestEntry) return null;
  const text = (await readAll(await zip.openReadStreamPromise(manifestEntry), MANIFEST_MAX)).toString('utf8');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  const r = manifestSchema.safeParse(parsed);
  if (!r.success)
    throw new InputError(
      'manifest.json is not an svcmail export manifest; upload again with useManifest=false to file every message into the chosen folder',
    );
  return r.data;
}

/** Counts unpacked bytes and stops the import once they pass max_unpacked_bytes (the zip-bomb guard). */
function unpackGuard(limits: ImportLimits): (n: number) => void {
  let unpacked = 0;
  return (n) => {
    unpacked += n;
    if (unpacked > limits.maxUnpackedBytes)
      throw new InputError(
        `the zip unpacks to more than mail:mailbox_import:max_unpacked_bytes (${limits.maxUnpackedBytes} bytes); the import stopped there`,
      );
  };
}

/** One .eml entry of a zip as an item: its bytes, or why they cannot be read. */
async function zipEml(zip: yauzl.ZipFile, e: yauzl.Entry, index: number, limits: ImportLimits): Promise<SourceItem> {
  const base = { index, entry: e.fileName };
  if (e.uncompressedSize > limits.maxMessageBytes) return { ...base, error: tooLarge(limits) };
  try {
    return { ...base, raw: await readAll(await zip.openReadStreamPromise(e), limits.maxMessageBytes) };
  } catch (err) {
    return { ...base, error: `unreadable zip entry: ${(err as Error).message}` };
  }
}

/** The messages of one .mbox entry of a zip, numbered from `first`, filed where the manifest's folder says when it names one. */
async function* zipMbox(
  zip: yauzl.ZipFile,
  e: yauzl.Entry,
  first: number,
  folder: ManifestFolder | undefined,
  limits: ImportLimits,
  guard: (n: number) => void,
): AsyncGenerator<SourceItem> {
  const stream = await zip.openReadStreamPromise(e);
  const counted = (async function* () {
    for await (const c of stream) {
      guard((c as Buffer).length);
      yield c as Buffer;
    }
  })();
  yield* fromMbox(counted, e.fileName, limits, first, folder ? { path: folder.path, role: folder.role } : undefined, folder?.messages);
}

/** A zip upload: its .eml and .mbox entries in order (with an export manifest, per folder); other files are not mail. */
async function* zipItems(
  file: string,
  useManifest: boolean,
  limits: ImportLimits,
  onBytes: (n: number) => void,
): AsyncGenerator<SourceItem> {
  const { zip, entries } = await openZip(file);
  try {
    const manifest = useManifest ? await readManifest(zip, entries) : null;
    const byFile = new Map((manifest?.folders ?? []).map((f) => [f.file, f]));
    const guard = unpackGuard(limits);
    let index = 0;
    for (const e of entries) {
      if (skippedName(e.fileName)) continue;
      const lower = e.fileName.toLowerCase();
      if (lower.endsWith('.eml')) {
        guard(e.uncompressedSize);
        onBytes(e.compressedSize);
        yield await zipEml(zip, e, index++, limits);
      } else if (lower.endsWith('.mbox')) {
        for await (const item of zipMbox(zip, e, index, byFile.get(e.fileName), limits, guard)) {
          index = item.index + 1;
          yield item;
        }
        onBytes(e.compressedSize);
      }
      // Other files (calendar.ics, contacts.vcf, notes.json, tasks.json) are not mail: pimFiles reads them.
    }
  } finally {
    zip.close();
  }
}

/** Each message of an upload: an mbox, one .eml, or a zip of .eml and .mbox files (with an export manifest, per folder). */
export async function* importItems(
  file: string,
  req: Pick<ImportRequest, 'format' | 'useManifest'>,
  limits: ImportLimits,
  onBytes: (n: number) => void,
): AsyncGenerator<SourceItem> {
  if (req.format === 'eml') yield* emlItems(file, limits, onBytes);
  else if (req.format === 'mbox') yield* mboxItems(file, limits, onBytes);
  else yield* zipItems(file, req.useManifest, limits, onBytes);
}

/** The personal-information files of a zip upload (an export's calendar, contacts, notes and tasks, or any .ics/.vcf). */
export interface PimFile {
  kind: 'ics' | 'vcf' | 'notes' | 'tasks';
  name: string;
  text?: string;
  error?: string;
}

/**
 * The calendar and contact files of a zip (every .ics and .vcf entry) and, when the zip is an
 * svcmail export whose manifest is used, its notes.json and tasks.json — one at a time, each at most
 * maxFileBytes, all together within maxUnpackedBytes (the zip-bomb guard of the mail part). An
 * unreadable file is reported, never fatal; past the budget the rest is reported as not restored.
 */
export async function* pimFiles(
  file: string,
  useManifest: boolean,
  limits: { maxFileBytes: number; maxUnpackedBytes: number },
): AsyncGenerator<PimFile> {
  const { zip, entries } = await openZip(file);
  try {
    const isExport = useManifest && entries.some((e) => e.fileName === 'manifest.json');
    let unpacked = 0;
    for (const e of entries) {
      if (skippedName(e.fileName)) continue;
      const lower = e.fileName.toLowerCase();
      const kind = lower.endsWith('.ics')
        ? 'ics'
        : lower.endsWith('.vcf') || lower.endsWith('.vcard')
          ? 'vcf'
          : isExport && e.fileName === 'notes.json'
            ? 'notes'
            : isExport && e.fileName === 'tasks.json'
              ? 'tasks'
              : null;
      if (!kind) continue;
      if (e.uncompressedSize > limits.maxFileBytes) {
        yield { kind, name: e.fileName, error: `larger than ${limits.maxFileBytes} bytes` };
        continue;
      }
      unpacked += e.uncompressedSize;
      if (unpacked > limits.maxUnpackedBytes) {
        yield {
          kind,
          name: e.fileName,
          error: `the zip unpacks to more than mail:mailbox_import:max_unpacked_bytes (${limits.maxUnpackedBytes} bytes); this and later calendar, contact, note and task files were not restored`,
        };
        return;
      }
      try {
        yield { kind, name: e.fileName, text: (await readAll(await zip.openReadStreamPromise(e), limits.maxFileBytes)).toString('utf8') };
      } catch (err) {
        yield { kind, name: e.fileName, error: `unreadable zip entry: ${(err as Error).message}` };
      }
    }
  } finally {
    zip.close();
  }
}
