// What the lifecycle routes beyond the generic ones do with export and erasure requests: open the
// owner's archive, start an export on the owner's behalf, release an erased mailbox's addresses.
// Service functions: the routes in routes.ts call them.
import { createReadStream, type ReadStream } from 'node:fs';
import { writeAudit } from '../audit/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { ErasedAddressModel, MailboxModel } from '../mail/index.js';
import { type ResourceService } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { exportPath } from './files.js';
import { ErasureRequestModel, ExportRequestModel, type ErasureRequest, type ExportRequest } from './models.js';
import { dataExportRequestsResource, requireOwner } from './resources.js';

/** A ready archive, opened: the stream and what its download answer says about it. */
export interface OpenArchive {
  stream: ReadStream;
  filename: string;
  bytes: number;
  sha256: string | null;
}

/** Opens a file for reading; a file that is gone is the archive that is not available any more (409). */
async function opened(file: string): Promise<ReadStream> {
  const stream = createReadStream(file);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  }).catch(() => {
    throw new ApiError('api-120', 'the archive is not available any more');
  });
  return stream;
}

/**
 * The archive of a ready export, for the mailbox owner only (someone the owner shared the mailbox
 * with sees the request, not the archive); the download is audited.
 */
export async function openArchive(ctx: Ctx, service: ResourceService, uid: string): Promise<OpenArchive> {
  const rec = (await service.load(ctx, dataExportRequestsResource, uid)) as unknown as Row<ExportRequest>;
  const box = await requireOwner(ctx, rec.mailboxUid);
  if (rec.state !== 'ready' || !rec.expiresAt || new Date(rec.expiresAt) <= new Date())
    throw new ApiError('api-120', `the archive is not available: the export is ${rec.state}`);
  const stream = await opened(exportPath(ctx.config, rec.uid));
  try {
    await writeAudit(ctx.store, ctx, {
      action: 'data-export-requests.download',
      resource: 'data-export-requests',
      resourceUid: rec.uid,
      details: { mailboxUid: rec.mailboxUid, bytes: rec.archiveBytes },
    });
  } catch (e) {
    stream.destroy(); // no download without its audit entry
    throw e;
  }
  const day = new Date(rec.finishedAt ?? Date.now()).toISOString().slice(0, 10);
  return {
    stream,
    filename: `mailbox-${box.address.replace(/[^\w.@-]/g, '_')}-${day}.zip`,
    bytes: rec.archiveBytes,
    sha256: rec.archiveSha256,
  };
}

/**
 * An administrator starts an export for the owner (the caller's trusted role and fresh elevation are
 * checked by the route): audited with the reason, one export in progress per mailbox. The answer
 * is the administrative view: that the export exists and how it goes, never what it holds.
 */
export async function exportOnBehalf(ctx: Ctx, service: ResourceService, mailboxUid: string, reason: string) {
  if (!(await ctx.store.repo(MailboxModel).get(mailboxUid))) throw notFound('No such mailbox');
  if (await ctx.store.repo<ExportRequest>(ExportRequestModel).count({ mailboxUid, state: { $in: ['pending', 'running'] } }))
    throw new ApiError('api-120', 'an export of this mailbox is already in progress');
  const rec = await ctx.store.transaction(async (tx) => {
    const created = await tx.repo<ExportRequest>(ExportRequestModel).create({
      mailboxUid,
      reason,
      initiatedBy: 'admin',
      requestedBy: ctx.principal.uid,
      state: 'pending',
    } as ExportRequest);
    await writeAudit(tx, ctx, {
      action: 'data-export-requests.create.admin',
      resource: 'data-export-requests',
      resourceUid: created.uid,
      details: { mailboxUid, reason },
    });
    return created;
  });
  ctx.events.publish([rec.uid, rec.mailboxUid], {
    type: 'dataExportRequest',
    action: 'create',
    data: service.view(dataExportRequestsResource, rec as never),
  });
  wakeWorkers(ctx, 'lifecycle');
  return await dataExportRequestsResource.adminView!(ctx, rec as never);
}

/** Lifts the tombstones of a completed erasure, so its addresses can be given to a new mailbox (audited). */
export async function releaseAddresses(ctx: Ctx, uid: string): Promise<{ released: string[] }> {
  const rec = await ctx.store.repo<ErasureRequest>(ErasureRequestModel).get(uid);
  if (!rec) throw notFound();
  if (rec.state !== 'completed') throw new ApiError('api-120', `the erasure is ${rec.state}; addresses are released after it completed`);
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
  return { released };
}
