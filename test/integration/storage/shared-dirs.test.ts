// Two hosts, one service: copies with data directories of their own share the blob store, the
// lifecycle files and the escrow exports through their settings (mail:blobs:dir, mail:lifecycle:dir,
// mail:escrow:export_dir). A message handed off through one copy is filed by the other copy's worker
// and read through both; nothing lands in either copy's own data directory.
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { secondCopy, type SecondCopy } from './_copies.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { exportDir } from '../../../lib/escrow/export-archive.js';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { exportPath, uploadPath } from '../../../lib/lifecycle/index.js';
import { blobsOf } from '../../../lib/mail/index.js';
import type { TestApi } from '../../helpers/api.js';
import { sqlBackends } from '../../helpers/databases.js';
import { ingestFixture, message, type IngestFixture } from '../ingest/setup.js';

const backends = await sqlBackends();

describe.each(backends)('copies sharing their files through settings ($name)', (backend) => {
  const shared = mkdtempSync(join(tmpdir(), 'svcmail-shared-'));
  const dirs = {
    'mail:blobs:dir': join(shared, 'blobs'),
    'mail:lifecycle:dir': join(shared, 'lifecycle'),
    'mail:escrow:export_dir': join(shared, 'escrow'),
  };
  let a: IngestFixture;
  let copyB: SecondCopy;
  let b: TestApi;
  let bData: string;
  beforeAll(async () => {
    a = await ingestFixture(backend, dirs);
    // Copy B: the same database, a data directory of its own, the same shared directories.
    copyB = await secondCopy(a, backend.name, dirs);
    b = copyB.api;
    bData = copyB.dataDir;
  });
  afterAll(async () => {
    await copyB?.close();
    await a?.close();
    rmSync(shared, { recursive: true, force: true });
  });

  it("a message handed off through one copy is filed by the other copy's worker and read through both", async () => {
    const r = await a.deliver({ to: ['alice@example.test'], raw: message({ subject: 'across copies' }) });
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    await copyB.drain();
    const entry = (await b.deps.store.repo<IngestEntry>(IngestEntryModel).findOne({ transactionId: r.body.transactionId }))!;
    expect(entry.state).toBe('delivered');
    // The raw message is in the shared blob directory, under neither copy's data directory.
    expect(blobsOf(a.api.deps).root).toBe(dirs['mail:blobs:dir']);
    expect(blobsOf(b.deps).locate(entry.rawRef)?.startsWith(dirs['mail:blobs:dir'])).toBe(true);
    expect(existsSync(join(a.dataDir, 'blobs'))).toBe(false);
    expect(existsSync(join(bData, 'blobs'))).toBe(false);
    for (const api of [a.api, b]) {
      const res = await fetch(`${api.url}/api/mail/messages/${entry.messageUid}/raw`, {
        headers: { authorization: `Bearer ${a.users.alice}` },
      });
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('across copies');
    }
    expect(readdirSync(dirs['mail:blobs:dir']).length).toBeGreaterThan(0);
  });

  it('lifecycle files and escrow exports resolve to the shared directories on every copy', () => {
    const uid = '0198f7a2-1c2d-7e3f-8a9b-0c1d2e3f4a5b';
    for (const config of [a.api.config, b.config]) {
      expect(uploadPath(config, uid)).toBe(join(dirs['mail:lifecycle:dir'], 'imports', `${uid}.upload`));
      expect(exportPath(config, uid)).toBe(join(dirs['mail:lifecycle:dir'], 'exports', `${uid}.zip`));
      expect(exportDir(config, uid)).toBe(join(dirs['mail:escrow:export_dir'], uid));
    }
  });
});
