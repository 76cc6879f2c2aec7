export * from './models.js';
export {
  acceptHandoff,
  transactionIdOf,
  entryUid,
  type Handoff,
  type HandoffResult,
  type RecipientResult,
  type IngestDeps,
} from './accept.js';
export { ingestRouter } from './routes.js';
export { ingestAdminRouter } from './admin-routes.js';
export { checkIngestSecret, ingestGuard, proxyHeaderIn, PROXY_HEADERS, PROXY_HEADER_PREFIXES } from './guard.js';
export { resolveRecipient, knownAddresses, expandRecipient, servedDomains, type Resolution, type Expansion } from './resolve.js';
export { evaluateTransportRules, type TransportDecision } from './transport-rules.js';
export { verifySender, type SenderVerification } from './verify.js';
export { mailPort, filingAvailable, type MailPort, type FileRequest, type FiledCopy } from './mail-port.js';
export { recordingOutbound, systemMessage, nonDeliveryReport } from './outbound.js';
export { deliverEntry, prepare, type WorkerDeps, type PrepareCache, type Prepared, type RoundWrites } from './deliver.js';
export { isAutomated, senderListVerdict, controlKindOf, type ControlHooks, type ControlKind } from './delivery-rules.js';
export { INGEST_RESOURCES, ingestQueueResource, quarantineResource, transportRulesResource, distributionListsResource } from './admin.js';
export { isWakeJob, wakeWorkers, type WakeDeps, type WakeJob } from './wake.js';
export { readHeaders, headerValue } from './headers.js';
export type { PreparedMail } from './prepare.js';
export { INGEST_STATES, IngestEntryModel, OutboundHandoffModel } from './models.js';
export { recordCorrespondents, senderOf } from './delivery-rules.js';
export { readRound } from './round-reads.js';
export { autoReplyRouter, readAutoReply, writeAutoReply, type AutoReplySettings } from './auto-reply.js';
