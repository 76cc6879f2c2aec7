// Spec: Internal mail hand-off — "Stream the body; enforce a configurable maximum message size".
// The body goes to a temporary file in the blob store while it arrives (hashed on the way), is
// renamed into place when queued, and is never whole in memory; a refused body leaves no file.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterAll, beforeAll, describe, expect, it, onTestFailed } from 'vitest';
import { IngestEntryModel, type IngestEntry } from '../../../lib/ingest/index.js';
import { storeBackends } from '../../helpers/databases.js';
import { ingestFixture, INGEST_SECRET, type IngestFixture } from './setup.js';

const backends = await storeBackends();
const MB = 1024 * 1024;

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;
const wait = (ms: number) => new Promise((r) => setTimeout(r, ms));
/**
 * Live external memory (Buffers) after full collections: what the process really holds. V8 frees
 * array buffer memory after a collection, not within it: collect, let it settle, take the least.
 */
async function liveBuffers(): Promise<number> {
  let least = Infinity;
  for (let i = 0; i < 3; i++) {
    gc();
    await wait(50);
    least = Math.min(least, process.memoryUsage().arrayBuffers);
  }
  return least;
}

const HEAD = Buffer.from(
  'From: Big Sender <big@remote.example>\r\nTo: alice@example.test\r\nSubject: a big one\r\nMessage-ID: <big@remote.example>\r\nMIME-Version: 1.0\r\nContent-Type: text/plain\r\n\r\n',
);
/** One 64 KiB chunk of body lines, reused for every write (the client holds no copy of the message). */
const CHUNK = Buffer.from(`${'0123456789abcdef'.repeat(4)}\r\n`.repeat(1024 - 16).padEnd(64 * 1024, 'x'));
interface Upload {
  /** Resolves with the answer. */
  done: Promise<{ status: number; body: { code?: string; transactionId?: string } }>;
  /** Writes `count` chunks, respecting back-pressure. */
  send(count: number): Promise<void>;
  end(): void;
  abort(): void;
}

/** A chunked POST /internal/mta/deliver (no Content-Length: the limit is enforced while streaming). */
function upload(f: IngestFixture, to: string): Upload {
  const url = new URL(`${f.api.url}/internal/mta/deliver`);
  const req = request({
    host: url.hostname,
    port: url.port,
    path: url.pathname,
    method: 'POST',
    headers: {
      authorization: `Bearer ${INGEST_SECRET}`,
      'content-type': 'message/rfc822',
      'x-envelope-from': 'big%40remote.example',
      'x-envelope-to': encodeURIComponent(to),
      'transfer-encoding': 'chunked',
    },
  });
  const done = new Promise<{ status: number; body: { code?: string } }>((resolve, reject) => {
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c: Buffer) => (text += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: text ? JSON.parse(text) : {} }));
    });
    req.on('error', reject);
  });
  done.catch(() => undefined); // a test that aborts reads the failure itself, or not at all
  req.write(HEAD);
  return {
    done,
    async send(count) {
      for (let i = 0; i < count && !req.destroyed; i++) {
        if (!req.write(CHUNK)) await new Promise((r) => req.once('drain', r));
      }
    },
    end: () => req.end(),
    abort: () => req.destroy(),
  };
}

describe.each(backends)('streamed hand-off body ($name)', (backend) => {
  let f: IngestFixture;
  const tmpDir = () => join(f.dataDir, 'blobs', 'tmp');
  const tmpFiles = () => (existsSync(tmpDir()) ? readdirSync(tmpDir()) : []);
  const blobFiles = () =>
    (readdirSync(join(f.dataDir, 'blobs'), { recursive: true }) as string[]).filter((p) => /(^|\/)[0-9a-f]{64}$/.test(p)).sort();
  beforeAll(async () => {
    f = await ingestFixture(backend, { 'mail:ingest:max_message_bytes': 24 * MB });
  });
  afterAll(async () => f?.close());

  it('a 20 MB message is written to disk as it arrives, with bounded memory, and filed as one blob', async () => {
    const chunks = 20 * 16; // 20 MiB of body
    const before = await liveBuffers();
    const u = upload(f, 'alice@example.test');
    onTestFailed(() => u.abort());
    await u.send(chunks / 2);
    // Half sent and the request still open: the server already has most of it in a temporary file…
    let partial = 0;
    for (let i = 0; i < 200 && partial < 6 * MB; i++) {
      const [name] = tmpFiles();
      partial = name ? statSync(join(tmpDir(), name)).size : 0;
      if (partial < 6 * MB) await wait(25);
    }
    expect(partial).toBeGreaterThanOrEqual(6 * MB);
    // …and not in memory (collecting the chunks would hold all of it here).
    expect((await liveBuffers()) - before).toBeLessThan(4 * MB);
    await u.send(chunks / 2);
    u.end();
    const r = await u.done;
    expect(r.status).toBe(202);
    const [entry] = await f.api.deps.store.repo<IngestEntry>(IngestEntryModel).list({ filter: { transactionId: r.body.transactionId! } });
    const expected = createHash('sha256').update(HEAD);
    for (let i = 0; i < chunks; i++) expected.update(CHUNK);
    // The blob is the message byte for byte, under its sha256, and nothing is left in the temporary directory.
    expect(entry).toMatchObject({ rawRef: expected.digest('hex'), size: HEAD.length + chunks * CHUNK.length, state: 'queued' });
    const blob = join(f.dataDir, 'blobs', entry.rawRef.slice(0, 2), entry.rawRef); // one level of 256 directories
    expect(statSync(blob).size).toBe(entry.size);
    expect(readFileSync(blob).subarray(0, HEAD.length).equals(HEAD)).toBe(true);
    expect(tmpFiles()).toEqual([]);
  }, 60_000);

  it('over the limit while streaming: 413 api-110, no temporary file, no blob, no entry', async () => {
    const entries = await f.api.deps.store.repo(IngestEntryModel).count();
    const blobs = blobFiles();
    const u = upload(f, 'bob@example.test');
    const sending = u.send(25 * 16).catch(() => undefined);
    const r = await u.done;
    u.end();
    await sending;
    expect(r.status).toBe(413);
    expect(r.body.code).toBe('api-110');
    expect(tmpFiles()).toEqual([]);
    expect(await f.api.deps.store.repo(IngestEntryModel).count()).toBe(entries);
    expect(blobFiles()).toEqual(blobs);
  }, 60_000);

  it('a hand-off the client abandons halfway leaves no temporary file', async () => {
    const u = upload(f, 'bob@example.test');
    await u.send(32);
    for (let i = 0; i < 100 && !tmpFiles().length; i++) await wait(20);
    u.abort();
    for (let i = 0; i < 100 && tmpFiles().length; i++) await wait(20);
    expect(tmpFiles()).toEqual([]);
  });

  it('a body with no mailbox to go to (unknown recipient) is not kept', async () => {
    const before = blobFiles();
    const r = await f.deliver({ to: ['nobody@example.test'], raw: `${HEAD.toString()}only for nobody ${Date.now()}\r\n` });
    expect(r.status).toBe(202);
    expect(r.body.results[0].status).toBe('unknown');
    expect(tmpFiles()).toEqual([]);
    expect(blobFiles()).toEqual(before);
  });
});
