// Data lifecycle of a mailbox (Spec: Resource groups — administration: data-export-requests,
// erasure-requests, mailbox-import-requests; Roles and elevation — audited impersonation).
//
// Decisions (the spec leaves them open):
// - Export: the owner asks; an elevated administrator may ask on the owner's behalf (audited, with a
//   reason), but only the owner ever downloads the archive. One export in progress per mailbox.
// - Import: the owner uploads; administrators see only states and counts (?scope=admin, audited).
// - Erasure: trusted role + fresh elevation, audited; refused while an open escrow matter holds the
//   mailbox. Tombstones keep the addresses from being reused until an administrator releases them.
// - Impersonation: needs the owner's consent, is time-limited, read-only and audited read by read.
import { ErasedAddressModel } from '../mail/index.js';

export {
  LIFECYCLE_RESOURCES,
  dataExportRequestsResource,
  mailboxImportRequestsResource,
  erasureRequestsResource,
  impersonationSessionsResource,
  requireOwner,
} from './resources.js';
export {
  ExportRequestModel,
  ImportRequestModel,
  ErasureRequestModel,
  ImpersonationSessionModel,
  EXPORT_STATES,
  IMPORT_STATES,
  ERASURE_STATES,
  IMPERSONATION_STATES,
  type ExportRequest,
  type ImportRequest,
  type ErasureRequest,
  type ImpersonationSession,
} from './models.js';
export { lifecycleRouter } from './routes.js';
export { impersonationRouter } from './impersonation.js';
export { VIEWABLE } from './impersonation-actions.js';
export { runLifecycleRound, drainLifecycle, startLifecycleLoop, type LifecycleDeps, type LifecycleRound } from './jobs.js';
export { MANIFEST_FORMAT, manifestSchema, type Manifest } from './manifest.js';
export { exportPath, uploadPath } from './files.js';

/** Internal models of this folder (the resources bring theirs). */
export const LIFECYCLE_MODELS = [ErasedAddressModel];
