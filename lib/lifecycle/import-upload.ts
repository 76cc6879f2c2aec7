// The import upload: who may import is checked before the body is read, the body is streamed to a
// file (capped at mail:mailbox_import:max_upload_bytes), its format recognised, and the import
// request recorded, audited and announced for the worker. Service functions: routes.ts calls them.
import { createWriteStream } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { writeAudit } from '../audit/index.js';
import { ApiError, invalid } from '../errors/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { FolderModel, type Folder } from '../mail/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import { removeFile, tempPath, uploadPath } from './files.js';
import { IMPORT_FORMATS, ImportRequestModel, type ImportRequest } from './models.js';
import { mailboxImportRequestsResource, requireOwner } from './resources.js';

type Format = (typeof IMPORT_FORMATS)[number];

/** The query of an upload: the target mailbox, and optionally its folder, the format and whether an export's manifest is used. */
export const uploadQuery = z.object({
  mailboxUid: z.string().min(1),
  folderUid: z.string().min(1).optional().describe('target folder (default: Inbox)'),
  format: z.enum(IMPORT_FORMATS).optional(),
  useManifest: z.enum(['true', 'false']).optional().describe('false: ignore an export manifest and file everything into the target folder'),
});
export type UploadQuery = z.infer<typeof uploadQuery>;

/** The upload as it arrived: its declared type and length, and the body itself. */
export interface Upload {
  contentType: string;
  contentLength: number;
  body: NodeJS.ReadableStream;
}

/** The accepted content types; application/octet-stream is recognised from its first bytes. */
const TYPES: Record<string, Format | null> = {
  'application/mbox': 'mbox',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
  'message/rfc822': 'eml',
  'application/octet-stream': null,
};

/** The first bytes of a file: what they say the upload is, and whether it fits its format. */
async function sniff(file: string): Promise<Buffer> {
  const fh = await open(file, 'r');
  try {
    const buf = Buffer.alloc(512);
    const { bytesRead } = await fh.read(buf, 0, 512, 0);
    return buf.subarray(0, bytesRead);
  } finally {
    await fh.close();
  }
}
const isZip = (head: Buffer) =>
  head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x03, 0x04])) || head.subarray(0, 4).equals(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
const isMbox = (head: Buffer) => /^(\s*\n)*From /.test(head.toString('latin1'));

/** The folder, when one is named, must be one of the mailbox's. */
async function checkFolder(ctx: Ctx, q: UploadQuery): Promise<void> {
  if (!q.folderUid) return;
  const f = await ctx.store.repo<Folder>(FolderModel).get(q.folderUid);
  if (!f || f.mailboxUid !== q.mailboxUid)
    throw invalid('folderUid: no such folder in this mailbox', [{ path: 'folderUid', message: 'unknown folder' }]);
}

/** Writes the body to `file`; past the limit the rest is read and dropped, so the client still gets its 413 answer. */
async function receive(body: NodeJS.ReadableStream, file: string, max: number, tooBig: () => ApiError): Promise<number> {
  let bytes = 0;
  await pipeline(
    body,
    new Transform({
      transform(chunk: Buffer, _enc, cb) {
        bytes += chunk.length;
        if (bytes > max * 2 + 1_048_576) cb(tooBig());
        else cb(null, bytes > max ? undefined : chunk);
      },
    }),
    createWriteStream(file, { mode: 0o640 }),
  );
  if (bytes > max) throw tooBig();
  if (!bytes) throw invalid('the upload is empty');
  return bytes;
}

/** The format of a received file: the one asked for, else the content type's, else its first bytes'; checked against them. */
async function formatOf(file: string, asked: Format | undefined, declared: Format | null): Promise<Format> {
  const head = await sniff(file);
  const format = asked ?? declared ?? (isZip(head) ? 'zip' : isMbox(head) ? 'mbox' : 'eml');
  if (format === 'zip' && !isZip(head)) throw invalid('the upload is not a zip file');
  if (format === 'mbox' && !isMbox(head)) throw invalid('the upload is not an mbox file: it does not start with a "From " line');
  return format;
}

/** Records the request with its upload (moved into place under the request's uid), audited; the file goes if the record does not. */
async function record(ctx: Ctx, q: UploadQuery, tmp: string, format: Format, bytes: number) {
  const uid = uuidv7();
  await rename(tmp, uploadPath(ctx.config, uid));
  return await ctx.store
    .transaction(async (tx) => {
      const created = await tx.repo<ImportRequest>(ImportRequestModel).create({
        uid,
        mailboxUid: q.mailboxUid,
        folderUid: q.folderUid ?? null,
        format,
        useManifest: q.useManifest !== 'false',
        state: 'pending',
        requestedBy: ctx.principal.uid,
        uploadBytes: bytes,
      } as ImportRequest & { uid: string });
      await writeAudit(tx, ctx, {
        action: 'mailbox-import-requests.create',
        resource: 'mailbox-import-requests',
        resourceUid: uid,
        details: { mailboxUid: q.mailboxUid, format, bytes },
      });
      return created;
    })
    .catch(async (e: unknown) => {
      await removeFile(uploadPath(ctx.config, uid));
      throw e;
    });
}

/**
 * Takes an upload for import into a mailbox the caller owns and answers the pending import request.
 * Who may import, the folder, the type and the declared length are checked before the body is read:
 * nothing is stored for a caller who may not.
 */
export async function receiveImport(ctx: Ctx, service: ResourceService, q: UploadQuery, upload: Upload) {
  await requireOwner(ctx, q.mailboxUid);
  await checkFolder(ctx, q);
  const type = upload.contentType.split(';')[0].trim().toLowerCase();
  if (!(type in TYPES))
    throw new ApiError('api-117', 'upload the file as application/mbox, message/rfc822, application/zip or application/octet-stream');
  const max = ctx.config.get('mail:mailbox_import:max_upload_bytes');
  const tooBig = () => new ApiError('api-110', `the upload is larger than mail:mailbox_import:max_upload_bytes (${max} bytes)`);
  if (upload.contentLength > max) throw tooBig();
  const tmp = await tempPath(ctx.config, 'imports');
  try {
    const bytes = await receive(upload.body, tmp, max, tooBig);
    const rec = await record(ctx, q, tmp, await formatOf(tmp, q.format, TYPES[type]), bytes);
    const view = service.view(mailboxImportRequestsResource, rec as never);
    ctx.events.publish([rec.uid, rec.mailboxUid], { type: 'mailboxImportRequest', action: 'create', data: view });
    wakeWorkers(ctx, 'lifecycle');
    return view;
  } finally {
    await removeFile(tmp);
  }
}
