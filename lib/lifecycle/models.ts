import { z } from 'zod';
import { defineModel } from '../storage/index.js';

// Spec: "State names of the ... data export request and erasure request, and the moves between
// them: not shown". Designed here (and in the OpenAPI summaries):
//   data export:   pending → running → ready → expired;  pending|running → failed
//   mailbox import: pending → running → completed;      pending|running → failed
//   erasure:       pending → running → completed;       pending|running → failed (a new request may follow)
//   impersonation: pending → active → ended | expired;   pending → declined | expired
// A worker that dies mid-job leaves its record running under a lease; the next claim after the
// lease ends starts the job again (every job is idempotent).

const count = z.number().int().nonnegative().default(0);

export const EXPORT_STATES = ['pending', 'running', 'ready', 'expired', 'failed'] as const;
export const exportRequestFields = {
  mailboxUid: z.string().min(1),
  state: z.enum(EXPORT_STATES).default('pending'),
  /** owner: the owner asked; admin: an elevated administrator asked on the owner's behalf (audited). */
  initiatedBy: z.enum(['owner', 'admin']).default('owner'),
  requestedBy: z.string().default(''),
  reason: z.string().trim().max(2000).default(''),
  /** Messages written so far and in all (the count when the job started). */
  progress: z.object({ done: z.number().int(), total: z.number().int() }).default({ done: 0, total: 0 }),
  folders: count,
  messages: count,
  calendarEvents: count,
  contacts: count,
  archiveBytes: count,
  archiveSha256: z.string().nullable().default(null),
  expiresAt: z.date().nullable().default(null),
  finishedAt: z.date().nullable().default(null),
  error: z.string().nullable().default(null),
};
export const ExportRequestModel = defineModel({
  name: 'data_export_request',
  table: 'data_export_requests',
  fields: exportRequestFields,
  lease: true,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['state'] }],
});
export type ExportRequest = z.infer<z.ZodObject<typeof exportRequestFields>>;

export const IMPORT_STATES = ['pending', 'running', 'completed', 'failed'] as const;
export const IMPORT_FORMATS = ['mbox', 'eml', 'zip'] as const;
/** What an import restores besides mail, each counted imported, skipped (already there) and failed. */
export const PIM_KINDS = ['calendarEvents', 'contacts', 'notes', 'taskLists', 'tasks'] as const;
export type PimKind = (typeof PIM_KINDS)[number];
export type PimCounts = Record<PimKind, { imported: number; skipped: number; failed: number }>;
export const emptyPimCounts = (): PimCounts =>
  Object.fromEntries(PIM_KINDS.map((k) => [k, { imported: 0, skipped: 0, failed: 0 }])) as PimCounts;
const pimCount = z.object({ imported: count, skipped: count, failed: count });
export const importReportItem = z.object({ index: z.number().int(), entry: z.string(), reason: z.string() });
export const importRequestFields = {
  mailboxUid: z.string().min(1),
  /** The chosen folder; null: the Inbox (or the folders named by an export's manifest). */
  folderUid: z.string().nullable().default(null),
  format: z.enum(IMPORT_FORMATS),
  /** A zip holding an svcmail export manifest files each mbox into the folder it came from. */
  useManifest: z.boolean().default(true),
  state: z.enum(IMPORT_STATES).default('pending'),
  requestedBy: z.string().default(''),
  uploadBytes: count,
  bytesRead: count,
  imported: count,
  skipped: count,
  failed: count,
  foldersCreated: count,
  /** Calendar events, contacts, notes, task lists and tasks restored from the zip (its .ics/.vcf files; an export's notes.json and tasks.json). */
  pim: z
    .object(Object.fromEntries(PIM_KINDS.map((k) => [k, pimCount])) as Record<(typeof PIM_KINDS)[number], typeof pimCount>)
    .default(() => emptyPimCounts()),
  /** Each skipped or failed item: its position (in the upload for a message, in its file for a calendar/contact/note/task), where it came from and why (first 500). */
  report: z.array(importReportItem).default([]),
  finishedAt: z.date().nullable().default(null),
  error: z.string().nullable().default(null),
};
export const ImportRequestModel = defineModel({
  name: 'mailbox_import_request',
  table: 'mailbox_import_requests',
  fields: importRequestFields,
  lease: true,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['state'] }],
});
export type ImportRequest = z.infer<z.ZodObject<typeof importRequestFields>>;

export const ERASURE_STATES = ['pending', 'running', 'completed', 'failed'] as const;
export const erasureRequestFields = {
  mailboxUid: z.string().min(1),
  reason: z.string().trim().min(1).max(2000),
  /** Captured when the request is made: the addresses the tombstones keep. */
  address: z.string().default(''),
  aliases: z.array(z.string()).default([]),
  state: z.enum(ERASURE_STATES).default('pending'),
  requestedBy: z.string().default(''),
  /** Records deleted, by table, as the job goes. */
  deleted: z.record(z.string(), z.number()).default({}),
  blobFilesRemoved: count,
  finishedAt: z.date().nullable().default(null),
  error: z.string().nullable().default(null),
};
export const ErasureRequestModel = defineModel({
  name: 'erasure_request',
  table: 'erasure_requests',
  fields: erasureRequestFields,
  lease: true,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['state'] }],
});
export type ErasureRequest = z.infer<z.ZodObject<typeof erasureRequestFields>>;

export const IMPERSONATION_STATES = ['pending', 'active', 'declined', 'ended', 'expired'] as const;
export const impersonationFields = {
  mailboxUid: z.string().min(1),
  reason: z.string().trim().min(1).max(2000),
  state: z.enum(IMPERSONATION_STATES).default('pending'),
  /** The administrator who asked; only they can read through the session. */
  requestedBy: z.string().default(''),
  decidedBy: z.string().nullable().default(null),
  decidedAt: z.date().nullable().default(null),
  /** pending: until when the owner can approve; active: when read access ends. */
  expiresAt: z.date().nullable().default(null),
  /** Audited reads made through the session (the owner sees the count; the audit log has each). */
  reads: count,
};
export const ImpersonationSessionModel = defineModel({
  name: 'impersonation_session',
  table: 'impersonation_sessions',
  fields: impersonationFields,
  indexes: [{ fields: ['mailboxUid'] }, { fields: ['requestedBy'] }],
});
export type ImpersonationSession = z.infer<z.ZodObject<typeof impersonationFields>>;
