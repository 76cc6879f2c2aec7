export * from './models.js';
export { appendEscrowAudit, verifyEscrowAudit, type ChainVerdict, type EscrowAuditInput } from './audit.js';
export { ESCROW_RESOURCES, scopesResource, mattersResource, accessRequestsResource, matterExportsResource } from './resources.js';
export { validApprovals, heldScopeUids } from './access.js';
export { buildExportArchive, removeExportFiles, exportFile, type ManifestMessage } from './export-archive.js';
export { escrowRouter } from './routes.js';
export { MatterModel, type Matter } from './models.js';
