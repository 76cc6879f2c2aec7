// The raw message body of a hand-off, streamed to a staged blob as it arrives (hashed on the way,
// never whole in memory) and refused at once beyond mail:ingest:max_message_bytes.
import type { IncomingMessage } from 'node:http';
import { ApiError } from '../errors/index.js';
import type { BlobStore, StagedBlob } from '../storage/index.js';

const tooLarge = (limit: number, size?: number) =>
  new ApiError(
    'api-110',
    `Message too large: ${size !== undefined ? `${size} bytes` : `over ${limit} bytes`}; the limit is ${limit} bytes (mail:ingest:max_message_bytes)`,
  );

/**
 * Stages the request body (413 api-110 beyond the limit, 400 api-111 when the client aborts; the
 * temporary file is removed on every failure). On a failure the rest of the body is drained so the
 * client reads the answer instead of a reset.
 */
export async function receiveBody(req: IncomingMessage, blobs: BlobStore, limit: number): Promise<StagedBlob> {
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > limit) throw tooLarge(limit, declared);
  const w = await blobs.writer({ maxBytes: limit, tooLarge: () => tooLarge(limit) });
  try {
    await new Promise<void>((resolve, reject) => {
      let failed = false;
      let tail = Promise.resolve();
      const fail = (e: unknown) => {
        if (failed) return;
        failed = true;
        req.removeListener('data', onData);
        req.resume();
        reject(e);
      };
      const onData = (c: Buffer) => {
        req.pause();
        tail = tail.then(() => w.write(c)).then(() => void (failed || req.resume()), fail);
      };
      req.on('data', onData);
      req.on('end', () => void tail.then(() => void (failed || resolve()), fail));
      req.on('error', fail);
      req.on('close', () => {
        if (!req.complete) fail(new ApiError('api-111', 'Request aborted'));
      });
    });
    return await w.finish();
  } catch (e) {
    await w.abort();
    throw e;
  }
}
