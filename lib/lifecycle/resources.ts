import { ADMIN_ONLY } from '../settings/index.js';
import { ApiError, notFound } from '../errors/index.js';
import { wakeWorkers } from '../ingest/index.js';
import { MailboxModel, mailboxesResource, type Mailbox } from '../mail/index.js';
import { checkRecord, defineResource, type AnyRecord } from '../resources/index.js';
import { type Ctx } from '../context/index.js';
import type { Row } from '../storage/index.js';
import { holdsOn } from './erasure-job.js';
import { exportPath, removeFile, uploadPath } from './files.js';
import {
  ErasureRequestModel,
  ExportRequestModel,
  ImpersonationSessionModel,
  ImportRequestModel,
  exportRequestFields,
  importRequestFields,
  erasureRequestFields,
  impersonationFields,
} from './models.js';

const serverFieldsBut = (fields: object, ...keep: string[]) => Object.keys(fields).filter((k) => !keep.includes(k));
const pick = (rec: Record<string, unknown>, keys: string[]) => Object.fromEntries(keys.filter((k) => k in rec).map((k) => [k, rec[k]]));

/** The caller must own the mailbox (trusted roles stripped): invisible 404, visible but shared 403. */
export async function requireOwner(ctx: Ctx, mailboxUid: string): Promise<Row<Mailbox>> {
  const box = await ctx.store.repo<Mailbox>(MailboxModel).get(mailboxUid);
  if (!box) throw notFound();
  await checkRecord(ctx, mailboxesResource, box as unknown as AnyRecord, 'owner');
  return box;
}

/** Administration of one mailbox by uid: it must exist (global resources: no 404 hiding). */
async function existingMailbox(ctx: Ctx, mailboxUid: unknown): Promise<Row<Mailbox>> {
  const box = typeof mailboxUid === 'string' ? await ctx.store.repo<Mailbox>(MailboxModel).get(mailboxUid) : null;
  if (!box) throw notFound('No such mailbox');
  return box;
}

async function oneAtATime(ctx: Ctx, model: typeof ExportRequestModel, mailboxUid: string, what: string): Promise<void> {
  if (await ctx.store.repo(model).count({ mailboxUid, state: { $in: ['pending', 'running'] } }))
    throw new ApiError('api-120', `${what} of this mailbox is already in progress`);
}

const EXPORT_ADMIN_VIEW = [
  'uid',
  'version',
  'mailboxUid',
  'state',
  'initiatedBy',
  'requestedBy',
  'reason',
  // How far the worker is (messages written of all): the console's progress bar; no content.
  'progress',
  'createdAt',
  'finishedAt',
  'expiresAt',
  'error',
];

export const dataExportRequestsResource = defineResource({
  group: 'mail',
  name: 'data-export-requests',
  entity: 'dataExportRequest',
  summary:
    "Exports of a whole mailbox: the owner asks (or an elevated administrator on the owner's behalf with ?scope=admin, audited); the worker builds a zip (one mbox per folder with the raw messages byte for byte — S/MIME ciphertext stays ciphertext —, calendar.ics, contacts.vcf, notes.json, tasks.json, manifest.json). States pending → running → ready → expired, or failed. Only the owner downloads GET /:id/archive, while ready, until expiresAt (mail:data_export:ttl_hours)",
  model: ExportRequestModel,
  scope: 'mailbox',
  mailboxField: 'mailboxUid',
  parent: { resource: 'mailboxes', field: 'mailboxUid' },
  defaultAcl: [],
  audit: true,
  operations: ['list', 'head', 'get', 'create', 'delete'],
  serverFields: serverFieldsBut(exportRequestFields, 'mailboxUid'),
  view: (rec) => ({ ...rec, download: rec.state === 'ready' ? `/api/mail/data-export-requests/${String(rec.uid)}/archive` : null }),
  // An administrator sees that an export exists and how it went, never what it holds.
  adminView: async (_ctx, rec) => pick(rec, EXPORT_ADMIN_VIEW),
  hooks: {
    async beforeCreate(ctx, data) {
      await requireOwner(ctx, data.mailboxUid as string);
      await oneAtATime(ctx, ExportRequestModel, data.mailboxUid as string, 'an export');
      return { ...data, state: 'pending', initiatedBy: 'owner', requestedBy: ctx.principal.uid };
    },
    async afterCommit(ctx, action, before) {
      if (action === 'create') wakeWorkers(ctx, 'lifecycle');
      if (action === 'delete' && before) await removeFile(exportPath(ctx.config, before.uid));
    },
  },
});

export const mailboxImportRequestsResource = defineResource({
  group: 'mail',
  name: 'mailbox-import-requests',
  entity: 'mailboxImportRequest',
  summary:
    'Imports into a mailbox: the owner uploads an mbox, one .eml or a zip of .eml/.mbox files (POST with the file as the body); the worker files each message into the chosen folder — or, for an svcmail export, the folders its manifest names — and reports imported, skipped (duplicate Message-ID) and failed messages, each failure with its reason. Calendars (.ics) and contacts (.vcf) in a zip — and the notes.json and tasks.json of an export — are restored too, counted per kind in pim (what the mailbox already holds is skipped). States pending → running → completed, or failed',
  model: ImportRequestModel,
  scope: 'mailbox',
  mailboxField: 'mailboxUid',
  parent: { resource: 'mailboxes', field: 'mailboxUid' },
  defaultAcl: [],
  audit: true,
  operations: ['list', 'head', 'get', 'delete'],
  serverFields: serverFieldsBut(importRequestFields, 'mailboxUid', 'folderUid', 'format', 'useManifest'),
  adminView: async (_ctx, rec) =>
    pick(rec, [
      'uid',
      'version',
      'mailboxUid',
      'state',
      'format',
      'requestedBy',
      'uploadBytes',
      'bytesRead',
      'imported',
      'skipped',
      'failed',
      'createdAt',
      'finishedAt',
      'error',
    ]),
  hooks: {
    async afterCommit(ctx, action, before) {
      if (action === 'delete' && before) await removeFile(uploadPath(ctx.config, before.uid));
    },
  },
});

export const erasureRequestsResource = defineResource({
  group: 'mail',
  name: 'erasure-requests',
  entity: 'erasureRequest',
  summary:
    'Erasure of a mailbox (trusted role, fresh elevation, audited): the worker deletes every record of the mailbox — messages, folders, personal information, labels, rules, signatures, key vault, queue entries, ACL entries — and the blob files only it referenced, then the mailbox; a tombstone per address keeps it from being reused until released (POST /:id/release-addresses). Refused while an open escrow matter holds the mailbox. States pending → running → completed, or failed (a new request may follow); a pending request can be withdrawn with DELETE',
  model: ErasureRequestModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  audit: true,
  operations: ['list', 'head', 'get', 'create', 'delete'],
  sensitive: ['list', 'head', 'get', 'create', 'delete'],
  serverFields: serverFieldsBut(erasureRequestFields, 'mailboxUid', 'reason'),
  hooks: {
    async beforeCreate(ctx, data) {
      const box = await existingMailbox(ctx, data.mailboxUid);
      if (await ctx.store.repo(ErasureRequestModel).count({ mailboxUid: box.uid, state: { $in: ['pending', 'running'] } }))
        throw new ApiError('api-112', 'an erasure of this mailbox is already requested');
      const holds = await holdsOn(ctx.store, box.uid);
      if (holds.length)
        throw new ApiError(
          'api-120',
          `the mailbox is a custodian of open escrow matters (${holds.join(', ')}): it is on hold and cannot be erased`,
        );
      return { ...data, address: box.address, aliases: box.aliases, state: 'pending', requestedBy: ctx.principal.uid };
    },
    beforeDelete(_ctx, rec) {
      if (rec.state !== 'pending')
        throw new ApiError('api-120', `only a pending erasure can be withdrawn (this one is ${String(rec.state)})`);
    },
    afterCommit(ctx, action) {
      if (action === 'create') wakeWorkers(ctx, 'lifecycle');
    },
  },
});

export const impersonationSessionsResource = defineResource({
  group: 'admin',
  name: 'impersonation-sessions',
  entity: 'impersonationSession',
  summary:
    'Audited impersonation (Spec: Roles and elevation): an elevated administrator asks to view a mailbox, giving a reason; nothing is visible until the owner approves (POST /api/mail/mailboxes/:id/impersonation-sessions/:sid/approve). An active session gives the administrator who asked read-only access under /api/admin/impersonation-sessions/:id/view/… for mail:impersonation:session_minutes; every read is audited and counted. States pending → active → ended | expired; pending → declined | expired. The normal mail routes never open to administrators',
  model: ImpersonationSessionModel,
  scope: 'global',
  defaultAcl: ADMIN_ONLY,
  createAcl: ADMIN_ONLY,
  audit: true,
  operations: ['list', 'head', 'get', 'create'],
  sensitive: ['list', 'head', 'get', 'create'],
  serverFields: serverFieldsBut(impersonationFields, 'mailboxUid', 'reason'),
  // The owner hears of the request on the mailbox channel (Spec: Events — the owner's subscription).
  eventChannels: (rec) => [rec.uid, String(rec.mailboxUid)],
  hooks: {
    async beforeCreate(ctx, data) {
      await existingMailbox(ctx, data.mailboxUid);
      const consentMs = ctx.config.get('mail:impersonation:consent_hours') * 3_600_000;
      return { ...data, state: 'pending', requestedBy: ctx.principal.uid, expiresAt: new Date(Date.now() + consentMs) };
    },
  },
});

export const LIFECYCLE_RESOURCES = [
  dataExportRequestsResource,
  mailboxImportRequestsResource,
  erasureRequestsResource,
  impersonationSessionsResource,
];
