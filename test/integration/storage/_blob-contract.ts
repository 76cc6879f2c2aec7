// The promises of a blob store kept in the datastore (chunk records, GridFS), one body for every such
// backend: content addressed and kept once, whole or absent, read and streamed, staged uploads copied
// in on commit, unknown ids api-107, concurrent writers of the same bytes, released and swept with a
// grace period, taken back by a writer that needs it again.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readdirSync } from 'node:fs';
import { Readable } from 'node:stream';
import { text } from 'node:stream/consumers';
import { expect, it } from 'vitest';
import { addBlobRefs, BlobModel, releaseBlobs, sweepReleasedBlobs, type BlobStore, type Store } from '../../../lib/storage/index.js';

const sha = (b: Buffer) => createHash('sha256').update(b).digest('hex');

export interface BlobBackendUnderTest {
  store: Store;
  blobs: BlobStore;
  /** Another store object on the same database (a second writer). */
  other(): BlobStore;
  /** How many records the backend keeps for a blob (chunks, files). */
  held(id: string): Promise<number>;
  /** How many it keeps for one blob of this size. */
  expected(size: number): number;
  /** Concurrent writers of the same bytes leave one copy (chunk records: yes; GridFS: each writer may leave a file). */
  dedupes: boolean;
}

/** The tests; `t()` answers the backend once the describe's beforeAll has opened it. */
export function blobStoreContract(t: () => BlobBackendUnderTest, sizes: { big: number }): void {
  it('stores content once under its sha256 and reads and streams it back; an empty blob too', async () => {
    const { blobs, held, expected } = t();
    const data = randomBytes(sizes.big);
    const b = await blobs.put(data);
    expect(b).toEqual({ blobId: sha(data), sha256: sha(data), size: data.length });
    expect(await held(b.blobId)).toBe(expected(data.length));
    expect(sha(await blobs.get(b.blobId))).toBe(b.sha256);
    const streamed: Buffer[] = [];
    for await (const c of blobs.stream(b.blobId)) streamed.push(c as Buffer);
    expect(sha(Buffer.concat(streamed))).toBe(b.sha256);
    await blobs.put(data);
    expect(await held(b.blobId)).toBe(expected(data.length));
    const empty = await blobs.put(Buffer.alloc(0));
    expect((await blobs.get(empty.blobId)).length).toBe(0);
  });

  it('a streamed upload lands in a local temporary file and is copied in on commit', async () => {
    const { blobs, held, expected } = t();
    const parts = Array.from({ length: 40 }, () => randomBytes(64 * 1024));
    const w = await blobs.writer();
    for (const p of parts) await w.write(p);
    const staged = await w.finish();
    expect(existsSync(w.tmpPath)).toBe(true);
    expect(await held(staged.sha256)).toBe(0);
    await staged.commit();
    expect(existsSync(w.tmpPath)).toBe(false);
    expect(await held(staged.sha256)).toBe(expected(40 * 64 * 1024));
    expect(sha(await blobs.get(staged.blobId))).toBe(sha(Buffer.concat(parts)));
    const viaStaged: Buffer[] = [];
    for await (const c of staged.stream()) viaStaged.push(c as Buffer);
    expect(sha(Buffer.concat(viaStaged))).toBe(staged.sha256);
    // No blob file anywhere under the data directory: only the (now empty) temporary folder.
    expect(readdirSync(blobs.tmpDir)).toEqual([]);
  });

  it('an unknown blob is api-107, read or streamed', async () => {
    const { blobs } = t();
    await expect(blobs.get('f'.repeat(64))).rejects.toMatchObject({ code: 'api-107' });
    await expect(text(blobs.stream('f'.repeat(64)))).rejects.toMatchObject({ code: 'api-107' });
    await expect(blobs.get('../etc/passwd')).rejects.toMatchObject({ code: 'api-107' });
  });

  it('two writers of the same bytes at once: both succeed, the blob reads whole (and is kept once where the backend can)', async () => {
    const { blobs, other, held, expected, dedupes } = t();
    const data = randomBytes(sizes.big);
    const second = other();
    await Promise.all([blobs.put(data), second.put(data), blobs.putStream(Readable.from([data]))]);
    if (dedupes) expect(await held(sha(data))).toBe(expected(data.length));
    else expect(await held(sha(data))).toBeGreaterThanOrEqual(1);
    expect(sha(await second.get(sha(data)))).toBe(sha(data));
  });

  it('a released blob stays readable, is taken back by a writer that needs it, and is swept after the grace period', async () => {
    const { blobs, store, held } = t();
    const data = randomBytes(5000);
    const id = sha(data);
    await blobs.put(data);
    expect(await releaseBlobs(store, blobs, [id])).toBe(1);
    expect((await blobs.released()).map((r) => r.id)).toContain(id);
    expect(sha(await blobs.get(id))).toBe(id); // readable meanwhile
    // A hand-off of the same bytes races the release: the writer takes it back.
    await blobs.put(data);
    expect((await blobs.released()).map((r) => r.id)).not.toContain(id);
    // Released again; a record names it before the sweep: the sweep restores it.
    await releaseBlobs(store, blobs, [id]);
    await addBlobRefs(store, [{ blobId: id, sha256: id, size: data.length }]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 0, restored: 1 });
    expect((await blobs.released()).map((r) => r.id)).not.toContain(id);
    // Nothing needs it any more: released, then deleted by the sweep once the grace period is over.
    await store.repo(BlobModel).delete(id);
    await releaseBlobs(store, blobs, [id]);
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 60_000 })).toEqual({ deleted: 0, restored: 0 });
    expect(await sweepReleasedBlobs(store, blobs, { graceMs: 0 })).toEqual({ deleted: 1, restored: 0 });
    expect(await held(id)).toBe(0);
    await expect(blobs.get(id)).rejects.toMatchObject({ code: 'api-107' });
  });
}
