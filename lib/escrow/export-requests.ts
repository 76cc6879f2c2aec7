// Matter exports: a holder asks, the worker builds (export-archive.ts), holders download while the
// release checks of the access request hold. Service functions: export-routes.ts declares the
// routes that call them.
import { createReadStream, type ReadStream } from 'node:fs';
import { ApiError, notFound } from '../errors/index.js';
import { wakeWorkers } from '../ingest/index.js';
import type { Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { checkRelease, escrowAudit, requestForHolder, scopeForHolder } from './access.js';
import { EXPORT_PARTS, exportFile, type ExportPart } from './export-archive.js';
import { MatterExportModel, type MatterExport } from './models.js';

/** The record as answered: no lease fields, no internal error text. */
export function exportView(e: Row<MatterExport> & { claimedBy?: unknown; leaseUntil?: unknown }): Record<string, unknown> {
  const { claimedBy: _c, leaseUntil: _l, lastError: _e, ...rest } = e;
  return rest;
}

/** Queues an export of the matter of an access request that passes the release checks; audited. */
export async function createExport(ctx: Ctx, accessRequestUid: string): Promise<Record<string, unknown>> {
  const held = await requestForHolder(ctx, accessRequestUid, 'export.create');
  // The export carries the custodians' ciphertext: it needs the same M-of-N approval as the keys.
  await checkRelease(ctx, held, 'export');
  const exp = await ctx.store.transaction(async (tx) => {
    const created = await tx.repo<MatterExport>(MatterExportModel).create({
      accessRequestUid,
      matterUid: held.matter.uid,
      scopeUid: held.scope.uid,
      requester: ctx.principal.uid,
      state: 'pending',
      attempts: 0,
      nextAttemptAt: new Date(),
      lastError: null,
      messageCount: null,
      mboxSize: null,
      mboxSha256: null,
      manifestSha256: null,
      readyAt: null,
      expiresAt: null,
    });
    await escrowAudit({ ...ctx, store: tx }, 'export.create', held.scope.uid, {
      uid: created.uid,
      accessRequestUid,
      matterUid: held.matter.uid,
    });
    return created;
  });
  wakeWorkers(ctx, 'export');
  return exportView(exp);
}

export interface ExportDownload {
  stream: ReadStream;
  contentType: string;
  filename: string;
}

/** Opens one file of a ready export for a holder, after the release checks of its access request; audited. */
export async function openExport(ctx: Ctx, uid: string, part: ExportPart): Promise<ExportDownload> {
  const exp = await ctx.store.repo<MatterExport>(MatterExportModel).get(uid);
  if (!exp) throw notFound();
  await scopeForHolder(ctx, exp.scopeUid, 'export.download', { uid, part });
  const held = await requestForHolder(ctx, exp.accessRequestUid);
  const refuse = async (why: string): Promise<never> => {
    await escrowAudit(ctx, 'export.refused', exp.scopeUid, { uid, part, reason: why });
    throw new ApiError('api-120', why);
  };
  if (exp.state !== 'ready') await refuse(exp.state === 'pending' ? 'the export is not built yet' : `the export is ${exp.state}`);
  if (!exp.expiresAt || new Date(exp.expiresAt).getTime() <= Date.now()) await refuse('the export has expired');
  // Spec: Key escrow access 3 — the same re-checks as the material, on every read.
  const approvers = await checkRelease(ctx, held, 'export');
  const stream = createReadStream(exportFile(ctx.config, uid, part));
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  }).catch(() => refuse('the export files are gone'));
  try {
    await escrowAudit(ctx, 'export.download', exp.scopeUid, {
      uid,
      part,
      sha256: part === 'mbox' ? exp.mboxSha256 : exp.manifestSha256,
      approvers: approvers.map((a) => a.holder),
    });
  } catch (e) {
    stream.destroy(); // no download without its audit entry
    throw e;
  }
  return {
    stream,
    contentType: part === 'mbox' ? 'application/mbox' : 'application/json',
    filename: `${uid}-${EXPORT_PARTS[part]}`,
  };
}
