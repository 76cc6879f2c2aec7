import { z } from 'zod';
import { setting } from '../define.js';

// Spec: Resource groups (administration: data-export-requests, erasure-requests,
// mailbox-import-requests), Roles and elevation (audited impersonation). Limits not shown in the
// spec are designed here and documented in lib/lifecycle/index.ts.
export const lifecycleSettings = {
  'mail:data_export:ttl_hours': setting(z.number().positive().max(8760), {
    default: 168,
    doc: 'A built mailbox export can be downloaded by the owner for this many hours; then the worker deletes the archive (state expired).',
  }),
  'mail:mailbox_import:max_upload_bytes': setting(z.number().int().positive(), {
    default: 1_073_741_824,
    doc: 'Largest mbox, .eml or zip upload POST /api/mail/mailbox-import-requests accepts (413 api-110 beyond it).',
  }),
  'mail:mailbox_import:max_message_bytes': setting(z.number().int().positive(), {
    default: 52_428_800,
    doc: 'Largest single message an import files; a larger one is reported as failed and the import goes on.',
  }),
  'mail:mailbox_import:max_unpacked_bytes': setting(z.number().int().positive(), {
    default: 4_294_967_296,
    doc: 'Most bytes an import unpacks from a zip upload (zip-bomb guard), counted for its messages and again for its calendar, contact, note and task files; the import stops there and reports it.',
  }),
  'mail:impersonation:session_minutes': setting(z.number().int().positive().max(1440), {
    default: 60,
    doc: 'An impersonation session the mailbox owner approved gives read-only access for this many minutes.',
  }),
  'mail:impersonation:consent_hours': setting(z.number().positive().max(720), {
    default: 24,
    doc: "An impersonation session waits this long for the owner's consent; then it can no longer be approved.",
  }),
  'mail:jobs:lifecycle:interval_seconds': setting(z.number().positive(), {
    default: 30,
    doc: 'Period of the data lifecycle job (exports, imports, erasures, export expiry) in the worker daemon; it also runs at once when woken.',
  }),
  'mail:jobs:lifecycle:lease_seconds': setting(z.number().int().positive(), {
    default: 600,
    doc: 'Lease on a claimed export, import or erasure; renewed while the job reports progress, so a live job is never taken over.',
  }),
};
