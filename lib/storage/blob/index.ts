import { createHash, randomBytes } from 'node:crypto';
import { closeSync, createReadStream, fstatSync, openSync, readSync, statSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rename, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import type { Readable } from 'node:stream';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ApiError } from '../../errors/index.js';
import { defineModel } from '../model.js';
import type { Store } from '../port.js';

/**
 * Content-addressed blobs (raw messages, attachments): stored once under their sha256, written
 * atomically (temporary file, fsync, rename, fsync of the directory) so a crash never leaves a
 * half-written blob under a real name, and reference-counted in the store so the last reference
 * frees the file.
 */
export const blobFields = {
  size: z.number().int().nonnegative(),
  refs: z.number().int().default(0),
};
export const BlobModel = defineModel({ name: 'blob', table: 'blobs', fields: blobFields });

/** A blob set aside by releaseBlobs (release.ts), waiting out its grace period. */
export interface ReleasedBlob {
  id: string;
  /** When it was released (ms). */
  at: number;
  /** The backend's handle of the set-aside copy (the file, or the blob id in the database). */
  ref: string;
}

export interface StoredBlob {
  blobId: string;
  sha256: string;
  size: number;
}

const ID = /^[0-9a-f]{64}$/;

/** Blobs up to this size are read in one synchronous go (see readSmall). */
const SMALL_BLOB = 256 * 1024;

/**
 * The file's bytes when it holds at most SMALL_BLOB bytes, else null (read it asynchronously).
 * A message of a few kilobytes costs four trips through the thread pool when read asynchronously
 * (open, fstat, read, close), several times the reading itself; read here, it blocks the event
 * loop for the few microseconds the page cache needs. Throws ENOENT like readFile.
 */
function readSmall(file: string): Buffer | null {
  const fd = openSync(file, 'r');
  try {
    const size = fstatSync(fd).size;
    if (size > SMALL_BLOB) return null;
    const buf = Buffer.allocUnsafe(size);
    let at = 0;
    while (at < size) {
      const n = readSync(fd, buf, at, size - at, at);
      if (n === 0) break;
      at += n;
    }
    return at === size ? buf : buf.subarray(0, at);
  } finally {
    closeSync(fd);
  }
}

/** Makes the directory's entries (a rename or a new directory in it) durable. */
async function syncDir(dir: string): Promise<void> {
  const fh = await open(dir, 'r');
  try {
    await fh.sync();
  } finally {
    await fh.close();
  }
}

export class BlobStore {
  readonly root: string;
  constructor(config: Config) {
    // mail:blobs:dir: a directory every host of a scaled-out deployment shares (else <data_dir>/blobs).
    this.root = resolve(config.get('mail:blobs:dir') || join(config.get('data_dir'), 'blobs'));
  }

  /**
   * Where a blob is written: one level of 256 directories named by the first two hex digits of its
   * hash, all made after the first few hundred blobs. (Two levels, 65 536 directories, made a new
   * directory for nearly every new blob, and a new directory is durable only once its parent is
   * fsynced too.)
   */
  path(id: string): string {
    if (!ID.test(id)) throw new ApiError('api-107', 'No such blob');
    return join(this.root, id.slice(0, 2), id);
  }

  /** Where a data directory written before the one-level layout holds it: read and removed, never written. */
  #legacyPath(id: string): string {
    return join(this.root, id.slice(0, 2), id.slice(2, 4), id);
  }

  /** The file holding the blob (its path, or its legacy path when only that exists); null when neither does. */
  locate(id: string): string | null {
    const file = this.path(id);
    if (statSync(file, { throwIfNoEntry: false })) return file;
    const old = this.#legacyPath(id);
    return statSync(old, { throwIfNoEntry: false }) ? old : null;
  }

  /** Is a blob of this id and size there already (in either layout)? No exception for the usual "no". */
  protected async has(id: string, size: number): Promise<boolean> {
    return (
      statSync(this.path(id), { throwIfNoEntry: false })?.size === size ||
      statSync(this.#legacyPath(id), { throwIfNoEntry: false })?.size === size
    );
  }

  /** Writes the bytes unless a blob with the same hash exists; durable when this resolves. */
  async put(data: Buffer): Promise<StoredBlob> {
    const sha256 = createHash('sha256').update(data).digest('hex');
    const file = this.path(sha256);
    if (await this.has(sha256, data.length)) return { blobId: sha256, sha256, size: data.length };
    const tmp = `${file}.tmp-${randomBytes(6).toString('hex')}`;
    const fh = await this.#create(tmp, 'w');
    try {
      try {
        await fh.writeFile(data);
        await fh.sync();
      } finally {
        await fh.close();
      }
      await this.#place(tmp, file);
    } catch (e) {
      // A full disk (ENOSPC) or any other failure: the partial temporary file goes, not the space it holds.
      await rm(tmp, { force: true }).catch(() => undefined);
      throw e;
    }
    return { blobId: sha256, sha256, size: data.length };
  }

  /** Where blobs are written while they stream in (same file system as the blobs: rename is atomic). */
  get tmpDir(): string {
    return join(this.root, 'tmp');
  }

  /**
   * A blob written as it arrives: bytes go to a temporary file while they are hashed; nothing is
   * under a real name until commit() renames it into place. Refuses past maxBytes (the file is
   * removed and the error the caller chose is thrown).
   */
  async writer(opts: { maxBytes?: number; tooLarge?: (size: number) => Error; keepHead?: number } = {}): Promise<BlobWriter> {
    // A process killed mid-upload leaves its temporary file: the first writer of a process sweeps old ones.
    if (!this.#swept) this.#swept = this.#sweep().catch(() => undefined);
    const tmp = join(this.tmpDir, `${Date.now()}-${randomBytes(8).toString('hex')}`);
    return new BlobWriter(this, tmp, await this.#create(tmp, 'wx'), opts);
  }

  #swept: Promise<void> | undefined;

  async #sweep(): Promise<void> {
    const cutoff = Date.now() - 24 * 3600_000;
    for (const name of await readdir(this.tmpDir)) {
      const file = join(this.tmpDir, name);
      const st = await stat(file).catch(() => null);
      if (st && st.mtimeMs < cutoff) await rm(file, { force: true });
    }
  }

  /** Streams a source into the store: writer, every chunk, commit. */
  async putStream(
    source: AsyncIterable<Buffer | Uint8Array>,
    opts: { maxBytes?: number; tooLarge?: (size: number) => Error } = {},
  ): Promise<StoredBlob> {
    const w = await this.writer(opts);
    try {
      for await (const chunk of source) await w.write(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk));
      return await (await w.finish()).commit();
    } finally {
      await w.abort();
    }
  }

  /** Renames a finished temporary file to its content address and makes the rename durable. */
  async #place(tmp: string, file: string): Promise<void> {
    await this.#inDir(dirname(file), () => rename(tmp, file));
    await syncDir(dirname(file));
  }

  /** Moves a finished temporary file into the store as the blob `id` (the file is gone afterwards). */
  protected placeFile(tmp: string, id: string): Promise<void> {
    return this.#place(tmp, this.path(id));
  }

  /** For BlobWriter: places tmp under the blob's name unless a blob with that hash is already there. */
  async placeStaged(tmp: string, sha256: string, size: number): Promise<void> {
    if (await this.has(sha256, size)) {
      await rm(tmp, { force: true });
      return;
    }
    await this.placeFile(tmp, sha256);
  }

  /** Creates a file (its directory made first when needed). */
  #create(file: string, flags: 'w' | 'wx'): Promise<FileHandle> {
    return this.#inDir(dirname(file), () => open(file, flags, 0o640));
  }

  /** Directories this process made or found (the store never removes one): one mkdir each, not one per blob. */
  readonly #dirs = new Set<string>();

  /**
   * Runs a file operation in `dir`, making the directory first unless this process already made or
   * saw it. One removed behind our back (an operator tidying up, ENOENT) is made again and the
   * operation tried once more.
   */
  async #inDir<R>(dir: string, op: () => Promise<R>): Promise<R> {
    if (!this.#dirs.has(dir)) {
      await this.#mkdir(dir);
      this.#dirs.add(dir);
    }
    try {
      return await op();
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
      await this.#mkdir(dir);
      return op();
    }
  }

  /** Makes dir and what is missing above it, each new directory made durable in its parent (fsync of the parent). */
  async #mkdir(dir: string): Promise<void> {
    const first = await mkdir(dir, { recursive: true });
    if (!first) return;
    const made: string[] = [];
    for (let d = dir; d.length >= first.length; d = dirname(d)) made.push(d);
    for (const d of made.reverse()) await syncDir(dirname(d));
  }

  async get(id: string): Promise<Buffer> {
    const read = async (file: string) => readSmall(file) ?? (await readFile(file));
    try {
      return await read(this.path(id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    try {
      return await read(this.#legacyPath(id));
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'ENOENT') throw e;
    }
    // Released while a record that needs it was being written (release.ts): readable until the sweep puts it back.
    const copy = (await this.released()).find((r) => r.id === id);
    if (copy) return read(copy.ref).catch(() => Promise.reject(new ApiError('api-107', 'No such blob')));
    throw new ApiError('api-107', 'No such blob');
  }

  stream(id: string): Readable {
    return createReadStream(this.locate(id) ?? this.path(id));
  }

  async remove(id: string): Promise<void> {
    await rm(this.path(id), { force: true });
    await rm(this.#legacyPath(id), { force: true });
  }

  /** Where released blobs wait out their grace period (release.ts). */
  get releasedDir(): string {
    return join(this.root, 'released');
  }

  /**
   * Moves the blob's file out of its place into the released folder (release.ts deletes it after a
   * grace period unless a record needs it again by then). Answers false when there was no file.
   * Until then it stays readable (get).
   */
  async setAside(id: string): Promise<boolean> {
    const file = this.locate(id);
    if (!file) return false;
    await this.#inDir(this.releasedDir, () => rename(file, join(this.releasedDir, this.#releasedName(id))));
    return true;
  }

  /** Puts a released blob back in its place unless the blob was written there again meanwhile. */
  async restore(r: ReleasedBlob): Promise<void> {
    if (this.locate(r.id)) await rm(r.ref, { force: true });
    else await this.#place(r.ref, this.path(r.id));
  }

  /** Deletes a released blob for good (release.ts, after its grace period). */
  async forget(r: ReleasedBlob): Promise<void> {
    await rm(r.ref, { force: true });
  }

  /** A released file's name: the blob id, then when it was released (a blob released twice has two). */
  #releasedName(id: string): string {
    return `${id}.${Date.now()}-${randomBytes(4).toString('hex')}`;
  }

  /** Released blobs: which blob, when it was released, and the backend's handle of the copy (here its file). */
  async released(): Promise<ReleasedBlob[]> {
    const names = await readdir(this.releasedDir).catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'ENOENT') return [] as string[];
      throw e;
    });
    return names.flatMap((name) => {
      const m = /^([0-9a-f]{64})\.(\d+)-[0-9a-f]+$/.exec(name);
      return m ? [{ ref: join(this.releasedDir, name), id: m[1], at: Number(m[2]) }] : [];
    });
  }
}

/** A blob fully written and fsynced under a temporary name, hashed, not yet committed. */
export interface StagedBlob extends StoredBlob {
  /** The first bytes (up to keepHead), kept in memory while streaming: header decisions read no file. */
  head: Buffer;
  /** The whole blob (reads the file unless it all fits in head). */
  read(): Promise<Buffer>;
  /** The bytes as a stream, from the temporary file or, once committed, from the blob. */
  stream(): Readable;
  /** Renames it into place (idempotent); afterwards it is an ordinary blob. */
  commit(): Promise<StoredBlob>;
  /** Removes the temporary file unless committed (idempotent). */
  discard(): Promise<void>;
}

export class BlobWriter {
  #hash = createHash('sha256');
  #size = 0;
  #head: Buffer[] = [];
  #headSize = 0;
  #state: 'open' | 'finished' | 'committed' | 'gone' = 'open';
  #staged: StagedBlob | null = null;
  constructor(
    private readonly blobs: BlobStore,
    readonly tmpPath: string,
    private fh: FileHandle | null,
    private readonly opts: { maxBytes?: number; tooLarge?: (size: number) => Error; keepHead?: number },
  ) {}

  get size(): number {
    return this.#size;
  }

  /** Appends one chunk (callers await each write: that is the back-pressure). */
  async write(chunk: Buffer): Promise<void> {
    if (this.#state !== 'open' || !this.fh) throw new Error('blob writer is closed');
    this.#size += chunk.length;
    if (this.opts.maxBytes !== undefined && this.#size > this.opts.maxBytes) {
      await this.abort();
      throw this.opts.tooLarge?.(this.#size) ?? new ApiError('api-110', `Too large: over ${this.opts.maxBytes} bytes`);
    }
    this.#hash.update(chunk);
    const keep = (this.opts.keepHead ?? 256 * 1024) - this.#headSize;
    if (keep > 0) {
      const part = chunk.subarray(0, keep);
      this.#head.push(Buffer.from(part)); // a copy: the caller may reuse its chunk
      this.#headSize += part.length;
    }
    await this.fh.write(chunk);
  }

  /** Flushes and fsyncs the temporary file; the blob's hash is known from here on. */
  async finish(): Promise<StagedBlob> {
    if (this.#staged) return this.#staged;
    if (this.#state !== 'open' || !this.fh) throw new Error('blob writer is closed');
    await this.fh.sync();
    await this.fh.close();
    this.fh = null;
    this.#state = 'finished';
    const sha256 = this.#hash.digest('hex');
    const size = this.#size;
    const head = Buffer.concat(this.#head, this.#headSize);
    const complete = size === head.length;
    const committed = () => this.#state === 'committed';
    this.#staged = {
      blobId: sha256,
      sha256,
      size,
      head,
      read: async () => (complete ? head : committed() ? this.blobs.get(sha256) : readFile(this.tmpPath)),
      stream: () => (committed() ? this.blobs.stream(sha256) : createReadStream(this.tmpPath)),
      commit: async () => {
        if (this.#state === 'finished') {
          await this.blobs.placeStaged(this.tmpPath, sha256, size);
          this.#state = 'committed';
        }
        if (this.#state !== 'committed') throw new Error('blob was discarded');
        return { blobId: sha256, sha256, size };
      },
      discard: () => this.abort(),
    };
    return this.#staged;
  }

  /** Drops the temporary file (a refused, aborted or unused body); nothing once committed. */
  async abort(): Promise<void> {
    if (this.#state === 'committed' || this.#state === 'gone') return;
    this.#state = 'gone';
    const fh = this.fh;
    this.fh = null;
    await fh?.close().catch(() => undefined);
    await rm(this.tmpPath, { force: true });
  }
}

/** One more record refers to each blob (inside the caller's transaction; a blob given twice gets two). */
export async function addBlobRefs(store: Store, blobs: StoredBlob[]): Promise<void> {
  // One statement: each record made with its references, or its references added to the record there.
  await store.repo<z.infer<z.ZodObject<typeof blobFields>>>(BlobModel).createOrAddMany(
    blobs.map((b) => ({ uid: b.blobId, size: b.size, refs: 1 })),
    ['refs'],
  );
}

/** One record fewer refers to the blob; answers true when it was the last (free the file after commit). */
export async function dropBlobRef(store: Store, blobId: string): Promise<boolean> {
  const repo = store.repo<z.infer<z.ZodObject<typeof blobFields>>>(BlobModel);
  const after = await repo.increment(blobId, { refs: -1 });
  if (after && after.refs <= 0) {
    await repo.delete(blobId);
    return true;
  }
  return false;
}
