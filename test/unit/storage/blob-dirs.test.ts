import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
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
    rmSync(dirname(dirname(blobs.path(a.blobId))), { recursive: true });
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
});
