import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { z } from 'zod';
import type { Config } from '../../config/index.js';
import { ApiError } from '../../errors/index.js';
import { bytesField, defineModel } from '../model.js';
import type { Store } from '../port.js';
import { BlobStore, type ReleasedBlob, type StoredBlob } from './index.js';
import { GridFsBlobStore } from '../document/gridfs.js';

/**
 * The blob store in the database (`mail:blobs:backend: database`): copies of svcmail on several
 * hosts share blobs through PostgreSQL, with no shared file system. A blob is its chunks, rows
 * (blobId, seq) of at most CHUNK bytes, all written by one INSERT (all or none: a crash never
 * leaves half a blob under its id). Releasing marks the chunks (`releasedAt`) instead of moving a
 * file; the blob sweep deletes marked chunks after the grace period. Streaming uploads still land
 * in a local temporary file first (tmpDir), as with the file store, and are copied in on commit.
 */
export const blobChunkFields = {
  blobId: z.string(),
  seq: z.number().int().nonnegative(),
  /** The whole blob's size, on every chunk (a reader knows it from the first). */
  size: z.number().int().nonnegative(),
  data: bytesField,
  /** Set while the blob waits out its grace period after the last reference went (release.ts). */
  releasedAt: z.date().nullable().default(null),
};
export const BlobChunkModel = defineModel({
  name: 'blobChunk',
  table: 'blob_chunks',
  fields: blobChunkFields,
  indexes: [{ fields: ['blobId', 'seq'] }, { fields: ['releasedAt'] }],
});
type Chunk = z.infer<z.ZodObject<typeof blobChunkFields>>;

/** Bytes per chunk row: small enough for one statement of several, large enough to keep rows few. */
export const CHUNK = 512 * 1024;
/** Chunks read per query while streaming a blob. */
const READ_AHEAD = 4;

const ID = /^[0-9a-f]{64}$/;
/** A chunk's record id: the hash in base64url (ids are at most 64 characters), then the chunk's number. */
const chunkUid = (id: string, seq: number) => `${Buffer.from(id, 'hex').toString('base64url')}.${seq}`;
const noSuchBlob = () => new ApiError('api-107', 'No such blob');

export class DatabaseBlobStore extends BlobStore {
  constructor(
    config: Config,
    private readonly store: Store,
  ) {
    super(config);
  }

  #repo() {
    return this.store.repo<Chunk>(BlobChunkModel);
  }

  /** There (released or not) with this size; a released one is taken back, since a writer needs it again. */
  protected override async has(id: string, size: number): Promise<boolean> {
    const first = await this.#repo().get(chunkUid(id, 0));
    if (!first || first.size !== size) return false;
    if (first.releasedAt) await this.#repo().updateMany({ blobId: id }, { releasedAt: null });
    return true;
  }

  override async put(data: Buffer): Promise<StoredBlob> {
    const sha256 = createHash('sha256').update(data).digest('hex');
    if (!(await this.has(sha256, data.length))) await this.#insert(sha256, data.length, chunksOf(data));
    return { blobId: sha256, sha256, size: data.length };
  }

  protected override async placeFile(tmp: string, id: string): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const b of createReadStream(tmp, { highWaterMark: CHUNK })) {
      chunks.push(b as Buffer);
      size += (b as Buffer).length;
    }
    await this.#insert(id, size, chunks);
    await rm(tmp, { force: true });
  }

  /** Every chunk in one statement; a racing writer of the same bytes has written the same rows (skipped). */
  async #insert(id: string, size: number, chunks: Buffer[]): Promise<void> {
    const rows = (chunks.length ? chunks : [Buffer.alloc(0)]).map((data, seq) => ({
      uid: chunkUid(id, seq),
      blobId: id,
      seq,
      size,
      data,
      releasedAt: null,
    }));
    await this.#repo().createMany(rows, { skipExisting: true });
  }

  override async get(id: string): Promise<Buffer> {
    if (!ID.test(id)) throw noSuchBlob();
    const rows = await this.#repo().list({ filter: { blobId: id }, sort: [{ field: 'seq', dir: 'asc' }], limit: 100_000 });
    if (!rows.length) throw noSuchBlob();
    return Buffer.concat(
      rows.map((r) => r.data),
      rows[0].size,
    );
  }

  /** The chunks in order, a few per query; an unknown blob errors the stream with api-107. */
  override stream(id: string): Readable {
    const repo = this.#repo();
    async function* chunks(): AsyncGenerator<Buffer> {
      if (!ID.test(id)) throw noSuchBlob();
      for (let seq = 0; ; seq += READ_AHEAD) {
        const rows = await repo.list({
          filter: { blobId: id, seq: { $gte: seq } },
          sort: [{ field: 'seq', dir: 'asc' }],
          limit: READ_AHEAD,
        });
        if (seq === 0 && !rows.length) throw noSuchBlob();
        for (const r of rows) yield r.data;
        if (rows.length < READ_AHEAD) return;
      }
    }
    return Readable.from(chunks(), { objectMode: false });
  }

  override async remove(id: string): Promise<void> {
    if (ID.test(id)) await this.#repo().deleteMany({ blobId: id });
  }

  override async setAside(id: string): Promise<boolean> {
    if (!ID.test(id)) return false;
    return (await this.#repo().updateMany({ blobId: id, releasedAt: null }, { releasedAt: new Date() })) > 0;
  }

  override async restore(r: ReleasedBlob): Promise<void> {
    await this.#repo().updateMany({ blobId: r.id }, { releasedAt: null });
  }

  override async forget(r: ReleasedBlob): Promise<void> {
    // Only while still released: a writer that took it back in the meantime keeps it.
    await this.#repo().deleteMany({ blobId: r.id, releasedAt: { $ne: null } });
  }

  override async released(): Promise<ReleasedBlob[]> {
    const rows = await this.#repo().list({ filter: { seq: 0, releasedAt: { $ne: null } }, limit: 100_000 });
    return rows.map((r) => ({ id: r.blobId, at: r.releasedAt!.getTime(), ref: r.blobId }));
  }

  override locate(): string | null {
    return null;
  }
}

function chunksOf(data: Buffer): Buffer[] {
  const out: Buffer[] = [];
  for (let at = 0; at < data.length; at += CHUNK) out.push(data.subarray(at, at + CHUNK));
  return out;
}

/** The store `mail:blobs:backend` names (see blobBackendProblem for what each needs). */
export function openBlobStore(config: Config, store: Store): BlobStore {
  const backend = config.get('mail:blobs:backend');
  if (backend === 'database') return new DatabaseBlobStore(config, store);
  if (backend === 'gridfs') {
    if (store.kind !== 'document')
      throw new ApiError('api-113', 'mail:blobs:backend "gridfs" needs the document backend (datastore: document)');
    return new GridFsBlobStore(config, store as unknown as ConstructorParameters<typeof GridFsBlobStore>[1]);
  }
  return new BlobStore(config);
}

/** Why this configuration cannot use its blob backend, or null. */
export function blobBackendProblem(config: Config): string | null {
  const backend = config.get('mail:blobs:backend');
  if (backend === 'gridfs' && config.get('datastore') !== 'document')
    return 'mail:blobs:backend "gridfs" needs the document backend (datastore: document, a MongoDB replica set); keep "files", or "database" on PostgreSQL';
  if (backend !== 'database') return null;
  const url = config.get('datastores:sql:url');
  if (config.get('datastore') === 'sql' && !/^postgres(ql)?:/.test(url))
    return 'mail:blobs:backend "database" needs PostgreSQL (datastores:sql:url) or MongoDB (datastore: document); on SQLite keep the default "files"';
  return null;
}
