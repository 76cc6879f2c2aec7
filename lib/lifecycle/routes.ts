import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, streamTo, type OpenApiRegistry } from '../http/index.js';
import { schemasOf, type ResourceService } from '../resources/index.js';
import { type Deps } from '../context/index.js';
import { receiveImport, uploadQuery } from './import-upload.js';
import { exportOnBehalf, openArchive, releaseAddresses } from './request-actions.js';
import { dataExportRequestsResource, mailboxImportRequestsResource } from './resources.js';

const onBehalfBody = z.strictObject({ mailboxUid: z.string().min(1), reason: z.string().trim().min(1).max(2000) });

/** What an administrator sees of an export: that it exists and how it goes, never what it holds. */
const exportAdminView: z.ZodType<Record<string, unknown>> = schemasOf(dataExportRequestsResource).record.pick({
  uid: true,
  version: true,
  mailboxUid: true,
  state: true,
  initiatedBy: true,
  requestedBy: true,
  reason: true,
  createdAt: true,
  finishedAt: true,
  expiresAt: true,
  error: true,
});

/** What the route groups share: where to declare, and the resource service. */
interface LifecycleRoutes {
  router: Router;
  deps: Deps;
  openapi: OpenApiRegistry;
  service: ResourceService;
}

const exportsPath = '/api/mail/data-export-requests';
const exportTags = ['mail/data-export-requests'];

/** Exports: the owner's archive download, and the administrator's export on the owner's behalf. */
function exportRoutes({ router, deps, openapi, service }: LifecycleRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: `${exportsPath}/:id/archive`,
    operationId: 'mail_data_export_requests_archive',
    summary: 'Download a ready export (a zip); the mailbox owner only, until expiresAt; audited',
    description:
      'Zip: mail/NNN-<folder>.mbox (mboxrd, raw messages byte for byte), calendar.ics, contacts.vcf, notes.json, tasks.json, manifest.json (folder tree, sha256, size, flags and labels of every message). 404 when the request is invisible, 403 api-102 for a caller who is not an owner, 409 api-120 when not ready or expired.',
    tags: exportTags,
    auth: 'signed-in',
    rawResponse: {
      description: 'application/zip',
      contentType: 'application/zip',
      headers: { 'X-Archive-Sha256': { description: 'sha256 of the archive', schema: { type: 'string' } } },
    },
    errors: { 403: 'api-102: the caller is not an owner of the mailbox', 409: 'api-120: the export is not ready or expired' },
    handler: async (ctx, { params }, _req, res) => {
      const archive = await openArchive(ctx, service, params.id);
      res.attachment(archive.filename);
      res.set({
        'Content-Type': 'application/zip',
        'Content-Length': String(archive.bytes),
        'X-Content-Type-Options': 'nosniff',
        'Content-Security-Policy': "default-src 'none'; sandbox",
        ...(archive.sha256 ? { 'X-Archive-Sha256': archive.sha256 } : {}),
      });
      await streamTo(res, archive.stream);
    },
  });

  // Spec: data export is sensitive administration. The administrator starts it; only the owner downloads.
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: `${exportsPath}/on-behalf`,
    operationId: 'mail_data_export_requests_on_behalf',
    summary:
      'An administrator starts an export of a mailbox for its owner (trusted role, fresh elevation, audited with the reason); the archive is still downloadable by the owner only',
    tags: exportTags,
    auth: 'trusted-fresh',
    body: onBehalfBody,
    status: 201,
    response: exportAdminView.describe('the request, administrative view'),
    errors: { 409: 'api-120: an export of this mailbox is already in progress' },
    handler: (ctx, { body }) => exportOnBehalf(ctx, service, body.mailboxUid, body.reason),
  });
}

/** The import upload, and releasing an erased mailbox's addresses. */
function importAndErasureRoutes({ router, deps, openapi, service }: LifecycleRoutes): void {
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/mailbox-import-requests',
    operationId: 'mail_mailbox_import_requests_upload',
    summary:
      'Upload an mbox, one .eml, or a zip of .eml/.mbox files (an svcmail export files each mbox into its folder) for import into a mailbox you own',
    description:
      'The body is the file. Content-Type application/mbox, message/rfc822, application/zip, or application/octet-stream (the format is then recognised from the first bytes). 413 api-110 beyond mail:mailbox_import:max_upload_bytes; 415 api-117 for other types. The worker then files each message (duplicates by Message-ID skipped, each bad message reported without stopping the import).',
    tags: ['mail/mailbox-import-requests'],
    auth: 'signed-in',
    query: uploadQuery,
    rawBody: { contentType: 'application/octet-stream', description: 'the file' },
    status: 201,
    response: schemasOf(mailboxImportRequestsResource).record.describe('the import request (state pending)'),
    errors: { 413: 'api-110: the upload is too large', 415: 'api-117: the content type is not one of an import' },
    handler: (ctx, { query }, req) =>
      receiveImport(ctx, service, query, {
        contentType: String(req.headers['content-type'] ?? ''),
        contentLength: Number(req.headers['content-length'] ?? 0),
        body: req,
      }),
  });

  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/api/mail/erasure-requests/:id/release-addresses',
    operationId: 'mail_erasure_requests_release_addresses',
    summary:
      'Lift the tombstones of a completed erasure so its addresses can be given to a new mailbox (trusted role, fresh elevation, audited)',
    tags: ['mail/erasure-requests'],
    auth: 'trusted-fresh',
    response: z.object({ released: z.array(z.string()) }),
    errors: { 409: 'api-120: the erasure has not completed' },
    handler: (ctx, { params }) => releaseAddresses(ctx, params.id),
  });
}

/**
 * Data lifecycle routes that are not generic: the owner's archive download, the administrator's
 * export on the owner's behalf, the import upload, and releasing an erased mailbox's addresses.
 * Mount before the generic resource routes.
 */
export function lifecycleRouter(service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const routes: LifecycleRoutes = { router: express.Router(), deps, openapi, service };
  exportRoutes(routes);
  importAndErasureRoutes(routes);
  return routes.router;
}
