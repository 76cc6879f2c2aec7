import type { Router } from 'express';
import { z } from 'zod';
import { defineRoute, streamTo, type OpenApiRegistry } from '../http/index.js';
import { schemasOf } from '../resources/index.js';
import type { Deps } from '../context/index.js';
import type { ExportPart } from './export-archive.js';
import { createExport, openExport } from './export-requests.js';
import { escrowErrors } from './http.js';
import { STATES } from './models.js';
import { matterExportsResource } from './resources.js';

const BASE = '/api/escrow/matter-export-requests';

/** Matter exports: a holder asks, the worker builds, holders download while the release checks hold. */
export function exportRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): void {
  const tags = ['escrow'];

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: BASE,
    operationId: 'escrow_matterexportrequests_post',
    summary: "Ask for an export of the matter's custodians' messages within its date range",
    description: `Holders of the matter's scope only. accessRequestUid names an access request of the matter that passes the release checks of GET …/material: the request is neither withdrawn nor closed, the matter is open, M valid approvals (403 api-102 with fewer, 409 api-120 otherwise; refusals are audited). The worker then builds messages.mbox and manifest.json. States: ${STATES.matterExport} Audited (export.*).`,
    tags,
    auth: 'trusted-fresh',
    body: z.strictObject({ accessRequestUid: z.string().min(1).max(100) }),
    status: 201,
    response: schemasOf(matterExportsResource).record,
    errors: escrowErrors({ 409: 'api-120: the request or the matter does not allow it' }),
    handler: (ctx, { body }) => createExport(ctx, body.accessRequestUid),
  });

  const download = (part: ExportPart, path: string, operationId: string, summary: string) =>
    defineRoute(router, deps, openapi, {
      method: 'get',
      path,
      operationId,
      summary,
      description:
        "Holders of the matter's scope only, while the export is ready and younger than mail:escrow:export_ttl_hours, and only while its access request passes the release checks (matter open, M valid approvals by current holders, each younger than mail:escrow:approval_ttl_hours); every download is audited (export.download), every refusal too (export.refused).",
      tags,
      auth: 'trusted-fresh',
      rawResponse: {
        description: part === 'mbox' ? 'messages.mbox, as an attachment' : 'manifest.json, as an attachment',
        contentType: part === 'mbox' ? 'application/mbox' : 'application/json',
      },
      errors: escrowErrors({
        409: 'api-120: not ready, expired, or the matter is closed',
        403: 'api-102: fewer than M valid approvals; api-103 / api-104: trusted role and fresh elevation',
      }),
      handler: async (ctx, { params }, _req, res) => {
        const file = await openExport(ctx, params.id, part);
        res.status(200).set({ 'Content-Type': file.contentType, 'Content-Disposition': `attachment; filename="${file.filename}"` });
        await streamTo(res, file.stream);
      },
    });
  download(
    'mbox',
    `${BASE}/:id/download`,
    'escrow_matterexportrequests_id_download_get',
    'Download messages.mbox of a ready export (mboxrd; raw messages, encrypted content stays ciphertext)',
  );
  download(
    'manifest',
    `${BASE}/:id/manifest`,
    'escrow_matterexportrequests_id_manifest_get',
    'Download manifest.json of a ready export (metadata, mbox offsets and SHA-256 of each message)',
  );
}
