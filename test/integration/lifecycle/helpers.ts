import { createHash } from 'node:crypto';
import yauzl from 'yauzl';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { drainLifecycle, type LifecycleDeps } from '../../../lib/lifecycle/index.js';
import type { TestApi } from '../../helpers/api.js';

export const sha = (b: Buffer | string) => createHash('sha256').update(b).digest('hex');

/** The worker's view of the test api's store (every model, for erasure). */
export const lifecycleDeps = (api: TestApi): LifecycleDeps => ({ ...api.deps, models: productModels(productRegistry()) });

/** Runs the lifecycle job until nothing is left, as the worker daemon would. */
export const drain = (api: TestApi) => drainLifecycle(lifecycleDeps(api), 'test-worker');

/** POST an import upload with the file as the body. */
export async function upload(api: TestApi, token: string, query: Record<string, string>, body: Buffer | string, type: string) {
  const res = await fetch(`${api.url}/api/mail/mailbox-import-requests?${new URLSearchParams(query)}`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': type },
    body: typeof body === 'string' ? body : new Uint8Array(body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** GET a binary answer. */
export async function download(api: TestApi, token: string | null, path: string) {
  const res = await fetch(api.url + path, { headers: token ? { authorization: `Bearer ${token}` } : {} });
  const buf = Buffer.from(await res.arrayBuffer());
  return { status: res.status, buf, headers: res.headers, json: () => JSON.parse(buf.toString('utf8')) };
}

/** Every file of a zip, by name, read with a zip reader that did not write it. */
export async function unzip(buf: Buffer): Promise<Map<string, Buffer>> {
  const zip = await yauzl.fromBufferPromise(buf, { lazyEntries: true });
  const out = new Map<string, Buffer>();
  await new Promise<void>((resolve, reject) => {
    zip.on('entry', (e: yauzl.Entry) => {
      zip.openReadStream(e, (err, stream) => {
        if (err) return reject(err);
        const parts: Buffer[] = [];
        stream.on('data', (c: Buffer) => parts.push(c));
        stream.on('end', () => {
          out.set(e.fileName, Buffer.concat(parts));
          zip.readEntry();
        });
        stream.on('error', reject);
      });
    });
    zip.on('end', resolve);
    zip.on('error', reject);
    zip.readEntry();
  });
  return out;
}
