import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createHash } from 'node:crypto';
import { dirname, join } from 'node:path';
import { Readable } from 'node:stream';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../lib/config/index.js';
import { BlobStore } from '../../../lib/storage/blob/index.js';

const dirs: string[] = [];
afterEach(() => {
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function store(): BlobStore {
  const dir = mkdtempSync(join(tmpdir(), 'svcmail-blobdirs-'));
  dirs.push(dir);
  return new BlobStore(loadConfig({ env: { NODE_ENV: 'test' }, values: { data_dir: dir } }));
}

// The store remembers the directories it made (one mkdir each); one removed behind its back is made again.
describe('blob store directories', () => {
  it('writes a blob whose fan-out directory was removed after an earlier write into it', async () => {
    const blobs = store();
    const a = await blobs.put(Buffer.from('first'));
    rmSync(dirname(blobs.path(a.blobId)), { recursive: true });
    const again = await blobs.put(Buffer.from('first'));
    expect((await blobs.get(again.blobId)).toString()).toBe('first');
  });

  it('streams a blob in after its temporary directory was removed', async () => {
    const blobs = store();
    await blobs.putStream(Readable.from([Buffer.from('one')]));
    rmSync(blobs.tmpDir, { recursive: true });
    const b = await blobs.putStream(Readable.from([Buffer.from('two')]));
    expect((await blobs.get(b.blobId)).toString()).toBe('two');
  });

  it('writes under one level of 256 directories: the second blob in a directory makes none', async () => {
    const blobs = store();
    const made = [];
    for (let i = 0; i < 300; i++) made.push(await blobs.put(Buffer.from(`blob ${i}`)));
    for (const b of made) expect(blobs.path(b.blobId)).toBe(join(blobs.root, b.blobId.slice(0, 2), b.blobId));
    const dirs = readdirSync(blobs.root).filter((d) => d !== 'tmp');
    expect(dirs.length).toBeLessThanOrEqual(256);
    expect(dirs.length).toBe(new Set(made.map((b) => b.blobId.slice(0, 2))).size);
  });

  it('reads, streams, finds and removes a blob a data directory holds in the earlier two-level layout, and stores no second copy of it', async () => {
    const blobs = store();
    const bytes = Buffer.from('written by an earlier version');
    const id = createHash('sha256').update(bytes).digest('hex');
    const legacy = join(blobs.root, id.slice(0, 2), id.slice(2, 4), id);
    mkdirSync(dirname(legacy), { recursive: true });
    writeFileSync(legacy, bytes);
    expect(blobs.locate(id)).toBe(legacy);
    expect((await blobs.get(id)).equals(bytes)).toBe(true);
    const streamed: Buffer[] = [];
    for await (const c of blobs.stream(id)) streamed.push(c as Buffer);
    expect(Buffer.concat(streamed).equals(bytes)).toBe(true);
    // The same content again, whole and streamed: found there, not written again.
    expect(await blobs.put(bytes)).toMatchObject({ blobId: id, size: bytes.length });
    const staged = await blobs.putStream(Readable.from([bytes]));
    expect(staged.blobId).toBe(id);
    expect(existsSync(blobs.path(id))).toBe(false);
    await blobs.remove(id);
    expect(existsSync(legacy)).toBe(false);
    expect(blobs.locate(id)).toBeNull();
    await expect(blobs.get(id)).rejects.toMatchObject({ code: 'api-107' });
  });
});

// get() reads a blob up to 256 KiB in one synchronous go and a larger one asynchronously: both whole.
describe('blob store reads', () => {
  it('answers every size byte for byte, on either side of the synchronous read limit', async () => {
    const blobs = store();
    for (const size of [0, 1, 4096, 256 * 1024, 256 * 1024 + 1, 3 * 1024 * 1024 + 7]) {
      const data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (i * 31 + size) & 0xff;
      const b = await blobs.put(data);
      const back = await blobs.get(b.blobId);
      expect(back.length, `size ${size}`).toBe(size);
      expect(back.equals(data), `size ${size}`).toBe(true);
    }
    await expect(blobs.get('0'.repeat(64))).rejects.toMatchObject({ code: 'api-107' });
  });
});
