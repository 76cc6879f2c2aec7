import { createReadStream } from 'node:fs';
import { rm } from 'node:fs/promises';
import { PassThrough, Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createHash } from 'node:crypto';
import type mongoose from 'mongoose';
import type { Config } from '../../config/index.js';
import { ApiError } from '../../errors/index.js';
import { BlobStore, type ReleasedBlob, type StoredBlob } from '../blob/index.js';
import { guarded } from './context.js';

/**
 * Blobs in GridFS (`mail:blobs:backend: gridfs`, with `datastore: document`): copies of svcmail on
 * several hosts share raw messages through the replica set, with no shared file system. Bucket
 * `blobs` (collections blobs.files, blobs.chunks). A blob is one GridFS file named by its sha256;
 * GridFS writes the chunks first and the file document last, so a blob is visible only whole (a
 * crash mid-upload leaves chunks no file names, never half a blob). Two writers of the same bytes
 * may both finish: readers take the newest file of the name and removal takes them all. Releasing
 * marks the files (`metadata.releasedAt`); the blob sweep deletes still-marked ones after the grace
 * period, as with the other stores. Streamed uploads still land in a local temporary file first.
 */
export class GridFsBlobStore extends BlobStore {
  readonly #bucket: mongoose.mongo.GridFSBucket;
  readonly #files: mongoose.mongo.Collection;
  readonly #chunks: mongoose.mongo.Collection;

  constructor(config: Config, store: { mongoDatabase(): mongoose.mongo.Db; gridfsBucket(name: string): mongoose.mongo.GridFSBucket }) {
    super(config);
    const db = store.mongoDatabase();
    this.#bucket = store.gridfsBucket('blobs');
    this.#files = db.collection('blobs.files');
    this.#chunks = db.collection('blobs.chunks');
  }

  /** There with this size; a released one is taken back, since a writer needs it again. */
  protected override async has(id: string, size: number): Promise<boolean> {
    return guarded(async () => {
      const file = await this.#files.findOne({ filename: id, length: size });
      if (!file) return false;
      if (file.metadata?.releasedAt) await this.#files.updateMany({ filename: id }, { $set: { 'metadata.releasedAt': null } });
      return true;
    });
  }

  override async put(data: Buffer): Promise<StoredBlob> {
    const sha256 = createHash('sha256').update(data).digest('hex');
    if (!(await this.has(sha256, data.length))) await this.#upload(sha256, Readable.from([data]));
    return { blobId: sha256, sha256, size: data.length };
  }

  protected override async placeFile(tmp: string, id: string): Promise<void> {
    await this.#upload(id, createReadStream(tmp));
    await rm(tmp, { force: true });
  }

  async #upload(id: string, source: Readable): Promise<void> {
    await guarded(() => pipeline(source, this.#bucket.openUploadStream(id, { metadata: { releasedAt: null } })));
  }

  override async get(id: string): Promise<Buffer> {
    const parts: Buffer[] = [];
    for await (const chunk of this.stream(id)) parts.push(chunk as Buffer);
    return Buffer.concat(parts);
  }

  /** The newest whole file of the name; an unknown blob errors the stream with api-107. */
  override stream(id: string): Readable {
    const out = new PassThrough();
    if (!/^[0-9a-f]{64}$/.test(id)) {
      queueMicrotask(() => out.destroy(new ApiError('api-107', 'No such blob')));
      return out;
    }
    const download = this.#bucket.openDownloadStreamByName(id);
    download.on('error', (e: Error & { code?: string }) =>
      out.destroy(e.code === 'ENOENT' || /FileNotFound|not found/i.test(e.message) ? new ApiError('api-107', 'No such blob') : e),
    );
    return download.pipe(out);
  }

  override async remove(id: string): Promise<void> {
    await this.#deleteWhere({ filename: id });
  }

  async #deleteWhere(filter: Record<string, unknown>): Promise<void> {
    await guarded(async () => {
      for (const f of await this.#files.find(filter, { projection: { _id: 1 } }).toArray())
        await this.#bucket.delete(f._id).catch((e: Error) => {
          // Another host removed it meanwhile.
          if (!/FileNotFound|not found/i.test(e.message)) throw e;
        });
    });
  }

  override async setAside(id: string): Promise<boolean> {
    const r = await guarded(() =>
      this.#files.updateMany({ filename: id, 'metadata.releasedAt': null }, { $set: { 'metadata.releasedAt': new Date() } }),
    );
    return r.modifiedCount > 0;
  }

  override async restore(r: ReleasedBlob): Promise<void> {
    await guarded(() => this.#files.updateMany({ filename: r.id }, { $set: { 'metadata.releasedAt': null } }));
  }

  override async forget(r: ReleasedBlob): Promise<void> {
    // Only while still released: a writer that took it back in the meantime keeps it. The file
    // document goes in one conditional write, its chunks only after it went (bucket.delete would
    // delete a file taken back between a find and the delete).
    await guarded(async () => {
      const released = { filename: r.id, 'metadata.releasedAt': { $ne: null } };
      for (const f of await this.#files.find(released, { projection: { _id: 1 } }).toArray())
        if ((await this.#files.deleteOne({ _id: f._id, 'metadata.releasedAt': { $ne: null } })).deletedCount === 1)
          await this.#chunks.deleteMany({ files_id: f._id });
    });
  }

  override async released(): Promise<ReleasedBlob[]> {
    const files = await guarded(() =>
      this.#files.find({ 'metadata.releasedAt': { $ne: null } }, { projection: { filename: 1, metadata: 1 }, limit: 100_000 }).toArray(),
    );
    const byId = new Map<string, ReleasedBlob>();
    for (const f of files)
      byId.set(f.filename as string, {
        id: f.filename as string,
        at: (f.metadata.releasedAt as Date).getTime(),
        ref: f.filename as string,
      });
    return [...byId.values()];
  }

  override locate(): string | null {
    return null;
  }
}
