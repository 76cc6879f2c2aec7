import { createReadStream } from 'node:fs';
import type { Response } from 'express';
import { z } from 'zod';
import { ApiError, notFound, parseOrThrow } from '../errors/index.js';
import { jsonSchema } from '../http/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { schemasOf } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { checkRelease, escrowAudit, requestForHolder, scopeForHolder } from './access.js';
import { EXPORT_PARTS, exportFile, type ExportPart } from './export-archive.js';
import type { AddRoute } from './http.js';
import { MatterExportModel, STATES, type MatterExport } from './models.js';
import { matterExportsResource } from './resources.js';

const BASE = '/api/escrow/matter-export-requests';

/** The record as answered: no lease fields, no internal error text. */
export function exportView(e: Row<MatterExport> & { claimedBy?: unknown; leaseUntil?: unknown }): Record<string, unknown> {
  const { claimedBy: _c, leaseUntil: _l, lastError: _e, ...rest } = e;
  return rest;
}

/** Streams one file of a ready export to a holder, after the release checks of the access request. */
async function download(ctx: Ctx, uid: string, part: ExportPart, res: Response): Promise<void> {
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
  const file = exportFile(ctx.config, uid, part);
  const stream = createReadStream(file);
  await new Promise<void>((resolve, reject) => {
    stream.once('open', () => resolve());
    stream.once('error', reject);
  }).catch(() => refuse('the export files are gone'));
  await escrowAudit(ctx, 'export.download', exp.scopeUid, {
    uid,
    part,
    sha256: part === 'mbox' ? exp.mboxSha256 : exp.manifestSha256,
    approvers: approvers.map((a) => a.holder),
  });
  res.status(200).set({
    'Content-Type': part === 'mbox' ? 'application/mbox' : 'application/json',
    'Content-Disposition': `attachment; filename="${uid}-${EXPORT_PARTS[part]}"`,
  });
  await new Promise<void>((resolve, reject) => stream.on('error', reject).pipe(res).on('finish', resolve).on('error', reject));
}

/** Matter exports: a holder asks, the worker builds, holders download while the release checks hold. */
export function exportRoutes(route: AddRoute): void {
  route(
    'post',
    BASE,
    async (ctx, req, res) => {
      const { accessRequestUid } = parseOrThrow(
        z.object({ accessRequestUid: z.string().min(1).max(100) }).strict(),
        req.body,
        'an export request takes {accessRequestUid}',
      );
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
      wakeWorkers(ctx.config, 'export');
      res.status(201).json(exportView(exp));
    },
    {
      summary: "Ask for an export of the matter's custodians' messages within its date range",
      description: `Holders of the matter's scope only. accessRequestUid names an access request of the matter that passes the release checks of GET …/material: the request is neither withdrawn nor closed, the matter is open, M valid approvals (403 api-102 with fewer, 409 api-120 otherwise; refusals are audited). The worker then builds messages.mbox and manifest.json. States: ${STATES.matterExport} Audited (export.*).`,
      status: 201,
      body: { type: 'object', required: ['accessRequestUid'], properties: { accessRequestUid: { type: 'string' } } },
      response: jsonSchema(schemasOf(matterExportsResource).record),
      errors: { 409: 'api-120: the request or the matter does not allow it' },
    },
  );

  const partDoc = (part: ExportPart) => ({
    summary:
      part === 'mbox'
        ? 'Download messages.mbox of a ready export (mboxrd; raw messages, encrypted content stays ciphertext)'
        : 'Download manifest.json of a ready export (metadata, mbox offsets and SHA-256 of each message)',
    description:
      "Holders of the matter's scope only, while the export is ready and younger than mail:escrow:export_ttl_hours, and only while its access request passes the release checks (matter open, M valid approvals by current holders, each younger than mail:escrow:approval_ttl_hours); every download is audited (export.download), every refusal too (export.refused).",
    contentType: part === 'mbox' ? 'application/mbox' : 'application/json',
    response: part === 'mbox' ? { type: 'string', format: 'binary' } : { type: 'object' },
    errors: {
      409: 'api-120: not ready, expired, or the matter is closed',
      403: 'api-102: fewer than M valid approvals; api-103 / api-104: trusted role and fresh elevation',
    },
  });
  route('get', `${BASE}/:id/download`, (ctx, req, res) => download(ctx, String(req.params.id), 'mbox', res), partDoc('mbox'));
  route('get', `${BASE}/:id/manifest`, (ctx, req, res) => download(ctx, String(req.params.id), 'manifest', res), partDoc('manifest'));
}
