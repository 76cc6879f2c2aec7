import { createReadStream, createWriteStream } from 'node:fs';
import { open, rename } from 'node:fs/promises';
import { Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import express, { type Request, type Response, type Router } from 'express';
import { v7 as uuidv7 } from 'uuid';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { writeAudit } from '../audit/index.js';
import { ApiError, invalid, notFound, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { FolderModel, MailboxModel, type Folder } from '../mail/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { exportPath, removeFile, tempPath, uploadPath } from './files.js';
import {
  ErasureRequestModel,
  ExportRequestModel,
  IMPORT_FORMATS,
  ImportRequestModel,
  type ErasureRequest,
  type ExportRequest,
  type ImportRequest,
} from './models.js';
import { dataExportRequestsResource, mailboxImportRequestsResource, requireOwner } from './resources.js';
import { ErasedAddressModel } from '../mail/index.js';

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

const uploadQuery = z
  .object({
    mailboxUid: z.string().min(1),
    folderUid: z.string().min(1).optional(),
    format: z.enum(IMPORT_FORMATS).optional(),
    useManifest: z.enum(['true', 'false']).optional(),
  })
  .strict();
const onBehalfBody = z.object({ mailboxUid: z.string().min(1), reason: z.string().trim().min(1).max(2000) }).strict();

const TYPES: Record<string, (typeof IMPORT_FORMATS)[number] | null> = {
  'application/mbox': 'mbox',
  'application/zip': 'zip',
  'application/x-zip-compressed': 'zip',
  'message/rfc822': 'eml',
  'application/octet-stream': null,
};

/** What the first bytes say the upload is (for application/octet-stream), and whether it fits the format. */
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

/**
 * Data lifecycle routes that are not generic: the owner's archive download, the administrator's
 * export on the owner's behalf, the import upload, and releasing an erased mailbox's addresses.
 * Mount before the generic resource routes.
 */
export function lifecycleRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const wrap = (fn: Handler) => async (req: Request, res: Response, next: (e?: unknown) => void) => {
    try {
      await fn(ctxOf(req, deps), req, res);
    } catch (e) {
      next(e);
    }
  };
  const exportsPath = '/api/mail/data-export-requests';

  router.get(
    `${exportsPath}/:id/archive`,
    wrap(async (ctx, req, res) => {
      const rec = (await service.load(ctx, dataExportRequestsResource, String(req.params.id))) as unknown as Row<ExportRequest>;
      // Only the owner: someone the owner shared the mailbox with sees the request, not the archive.
      const box = await requireOwner(ctx, rec.mailboxUid);
      if (rec.state !== 'ready' || !rec.expiresAt || new Date(rec.expiresAt) <= new Date())
        throw new ApiError('api-120', `the archive is not available: the export is ${rec.state}`);
      const file = exportPath(ctx.config, rec.uid);
      const stream = createReadStream(file);
      await new Promise<void>((resolve, reject) => {
        stream.once('open', () => resolve());
        stream.once('error', reject);
      }).catch(() => {
        throw new ApiError('api-120', 'the archive is not available any more');
      });
      await writeAudit(ctx.store, ctx, {
        action: 'data-export-requests.download',
        resource: 'data-export-requests',
        resourceUid: rec.uid,
        details: { mailboxUid: rec.mailboxUid, bytes: rec.archiveBytes },
      });
      res.attachment(
        `mailbox-${box.address.replace(/[^\w.@-]/g, '_')}-${new Date(rec.finishedAt ?? Date.now()).toISOString().slice(0, 10)}.zip`,
      );
      res.set({
        'Content-Type': 'application/zip',
        'Content-Length': String(rec.archiveBytes),
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': "default-src 'none'; sandbox",
        ...(rec.archiveSha256 ? { 'X-Archive-Sha256': rec.archiveSha256 } : {}),
      });
      await pipeline(stream, res);
    }),
  );
  openapi.add('get', `${exportsPath}/:id/archive`, {
    operationId: 'mail_data_export_requests_archive',
    summary: 'Download a ready export (a zip); the mailbox owner only, until expiresAt; audited',
    description:
      'Zip: mail/NNN-<folder>.mbox (mboxrd, raw messages byte for byte), calendar.ics, contacts.vcf, notes.json, tasks.json, manifest.json (folder tree, sha256, size, flags and labels of every message). 404 when the request is invisible, 403 api-102 for a caller who is not an owner, 409 api-120 when not ready or expired.',
    tags: ['mail/data-export-requests'],
    auth: 'signed-in',
    responses: {
      200: {
        description: 'application/zip',
        contentType: 'application/zip',
        schema: { type: 'string', format: 'binary' },
        headers: { 'X-Archive-Sha256': { description: 'sha256 of the archive', schema: { type: 'string' } } },
      },
    },
  });

  router.post(
    `${exportsPath}/on-behalf`,
    wrap(async (ctx, req, res) => {
      // Spec: data export is sensitive administration. The administrator starts it; only the owner downloads.
      requireTrusted(ctx.principal, ctx.config, { fresh: true });
      const body = parseOrThrow(onBehalfBody, req.body, 'on-behalf export takes {mailboxUid, reason}');
      if (!(await ctx.store.repo(MailboxModel).get(body.mailboxUid))) throw notFound('No such mailbox');
      const repo = ctx.store.repo<ExportRequest>(ExportRequestModel);
      if (await repo.count({ mailboxUid: body.mailboxUid, state: { $in: ['pending', 'running'] } }))
        throw new ApiError('api-120', 'an export of this mailbox is already in progress');
      const rec = await ctx.store.transaction(async (tx) => {
        const created = await tx.repo<ExportRequest>(ExportRequestModel).create({
          mailboxUid: body.mailboxUid,
          reason: body.reason,
          initiatedBy: 'admin',
          requestedBy: ctx.principal.uid,
          state: 'pending',
        } as ExportRequest);
        await writeAudit(tx, ctx, {
          action: 'data-export-requests.create.admin',
          resource: 'data-export-requests',
          resourceUid: created.uid,
          details: { mailboxUid: body.mailboxUid, reason: body.reason },
        });
        return created;
      });
      ctx.events.publish([rec.uid, rec.mailboxUid], {
        type: 'dataExportRequest',
        action: 'create',
        data: service.view(dataExportRequestsResource, rec as never),
      });
      wakeWorkers(ctx.config, 'lifecycle');
      res.status(201).json(await dataExportRequestsResource.adminView!(ctx, rec as never));
    }),
  );
  openapi.add('post', `${exportsPath}/on-behalf`, {
    operationId: 'mail_data_export_requests_on_behalf',
    summary:
      'An administrator starts an export of a mailbox for its owner (trusted role, fresh elevation, audited with the reason); the archive is still downloadable by the owner only',
    tags: ['mail/data-export-requests'],
    auth: 'trusted-fresh',
    requestBody: {
      schema: {
        type: 'object',
        required: ['mailboxUid', 'reason'],
        properties: { mailboxUid: { type: 'string' }, reason: { type: 'string', maxLength: 2000 } },
      },
    },
    responses: { 201: { description: 'the request, administrative view' } },
  });

  const importsPath = '/api/mail/mailbox-import-requests';
  router.post(
    importsPath,
    wrap(async (ctx, req, res) => {
      const q = parseOrThrow(
        uploadQuery,
        req.query,
        'an import takes ?mailboxUid=[&folderUid=][&format=mbox|eml|zip][&useManifest=true|false]',
      );
      // Who may import is known before the body is read: nothing is stored for a caller who may not.
      await requireOwner(ctx, q.mailboxUid);
      if (q.folderUid) {
        const f = await ctx.store.repo<Folder>(FolderModel).get(q.folderUid);
        if (!f || f.mailboxUid !== q.mailboxUid)
          throw invalid('folderUid: no such folder in this mailbox', [{ path: 'folderUid', message: 'unknown folder' }]);
      }
      const type = String(req.headers['content-type'] ?? '')
        .split(';')[0]
        .trim()
        .toLowerCase();
      if (!(type in TYPES))
        throw new ApiError('api-117', 'upload the file as application/mbox, message/rfc822, application/zip or application/octet-stream');
      const max = ctx.config.get('mail:mailbox_import:max_upload_bytes');
      const tooBig = () => new ApiError('api-110', `the upload is larger than mail:mailbox_import:max_upload_bytes (${max} bytes)`);
      if (Number(req.headers['content-length'] ?? 0) > max) throw tooBig();
      const tmp = await tempPath(ctx.config, 'imports');
      let bytes = 0;
      try {
        // Past the limit the rest is read and dropped, so the client still gets its 413 answer.
        await pipeline(
          req,
          new Transform({
            transform(chunk: Buffer, _enc, cb) {
              bytes += chunk.length;
              if (bytes > max * 2 + 1_048_576) cb(tooBig());
              else cb(null, bytes > max ? undefined : chunk);
            },
          }),
          createWriteStream(tmp, { mode: 0o640 }),
        );
        if (bytes > max) throw tooBig();
        if (!bytes) throw invalid('the upload is empty');
        const head = await sniff(tmp);
        const format = q.format ?? TYPES[type] ?? (isZip(head) ? 'zip' : isMbox(head) ? 'mbox' : 'eml');
        if (format === 'zip' && !isZip(head)) throw invalid('the upload is not a zip file');
        if (format === 'mbox' && !isMbox(head)) throw invalid('the upload is not an mbox file: it does not start with a "From " line');
        const uid = uuidv7();
        await rename(tmp, uploadPath(ctx.config, uid));
        const rec = await ctx.store
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
        const view = service.view(mailboxImportRequestsResource, rec as never);
        ctx.events.publish([rec.uid, rec.mailboxUid], { type: 'mailboxImportRequest', action: 'create', data: view });
        wakeWorkers(ctx.config, 'lifecycle');
        res.status(201).json(view);
      } finally {
        await removeFile(tmp);
      }
    }),
  );
  openapi.add('post', importsPath, {
    operationId: 'mail_mailbox_import_requests_upload',
    summary:
      'Upload an mbox, one .eml, or a zip of .eml/.mbox files (an svcmail export files each mbox into its folder) for import into a mailbox you own',
    description:
      'The body is the file. Content-Type application/mbox, message/rfc822, application/zip, or application/octet-stream (the format is then recognised from the first bytes). 413 api-110 beyond mail:mailbox_import:max_upload_bytes; 415 api-117 for other types. The worker then files each message (duplicates by Message-ID skipped, each bad message reported without stopping the import).',
    tags: ['mail/mailbox-import-requests'],
    auth: 'signed-in',
    parameters: [
      { name: 'mailboxUid', in: 'query', required: true, schema: { type: 'string' } },
      { name: 'folderUid', in: 'query', description: 'target folder (default: Inbox)', schema: { type: 'string' } },
      { name: 'format', in: 'query', schema: { type: 'string', enum: [...IMPORT_FORMATS] } },
      {
        name: 'useManifest',
        in: 'query',
        description: 'false: ignore an export manifest and file everything into the target folder',
        schema: { type: 'string', enum: ['true', 'false'] },
      },
    ],
    requestBody: { contentType: 'application/octet-stream', schema: { type: 'string', format: 'binary' } },
    responses: { 201: { description: 'the import request (state pending)' } },
  });

  router.post(
    '/api/mail/erasure-requests/:id/release-addresses',
    wrap(async (ctx, req, res) => {
      requireTrusted(ctx.principal, ctx.config, { fresh: true });
      const rec = await ctx.store.repo<ErasureRequest>(ErasureRequestModel).get(String(req.params.id));
      if (!rec) throw notFound();
      if (rec.state !== 'completed')
        throw new ApiError('api-120', `the erasure is ${rec.state}; addresses are released after it completed`);
      const tombs = ctx.store.repo<{ address: string }>(ErasedAddressModel);
      const released = (await tombs.list({ filter: { requestUid: rec.uid }, limit: 1000 })).map((t) => t.address);
      await ctx.store.transaction(async (tx) => {
        await tx.repo(ErasedAddressModel).deleteMany({ requestUid: rec.uid });
        await writeAudit(tx, ctx, {
          action: 'erasure-requests.release-addresses',
          resource: 'erasure-requests',
          resourceUid: rec.uid,
          details: { addresses: released },
        });
      });
      res.json({ released });
    }),
  );
  openapi.add('post', '/api/mail/erasure-requests/:id/release-addresses', {
    operationId: 'mail_erasure_requests_release_addresses',
    summary:
      'Lift the tombstones of a completed erasure so its addresses can be given to a new mailbox (trusted role, fresh elevation, audited)',
    tags: ['mail/erasure-requests'],
    auth: 'trusted-fresh',
    responses: { 200: { description: '{released: [addresses]}' } },
  });

  return router;
}
