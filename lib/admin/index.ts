import type { ModelDef } from '../storage/index.js';
import { branding } from './branding.js';
import { CounterModel } from './counters.js';
import { HeartbeatModel } from './heartbeat.js';
import { mailboxPolicy, retentionPolicy } from './policies.js';
import { setupState } from './setup-state.js';

export { domainsResource, DomainModel, domainFields } from './domains.js';
export { auditLogResource } from './audit-log.js';
export { ADMIN_ONLY, domainName } from './shared.js';
export { Metrics, type StateGauge } from './metrics.js';
export { defineSingleton, singletonRouter, type Singleton, type SingletonDecl, type SingletonRead, type SingletonView } from './singleton.js';
export { mailboxPolicy, readMailboxPolicy, retentionPolicy, readRetentionPolicy, retentionDays, RETENTION_CLASSES, ROLE_OF_CLASS, type MailboxPolicy, type RetentionPolicy, type RetentionClass } from './policies.js';
export { branding, readBranding, dataUrlBytes, type Branding } from './branding.js';
export { setupState, readSetup, changeSetup, SETUP_STEPS, type SetupStep } from './setup-state.js';
export { HeartbeatModel, startHeartbeat, listHeartbeats, isAlive, MISSED_BEATS, type Heartbeat, type HeartbeatWriter, type HeartbeatOptions } from './heartbeat.js';
export { CounterModel, countEvent, readCounter, COUNTERS, type CounterName } from './counters.js';
export { diagnostics, probeScanners, probeTransport, DAEMONS } from './diagnostics.js';
export { adminRouter } from './routes.js';

/** The administration records that are not resources (singletons, heartbeats, counters). */
export const ADMIN_MODELS: ModelDef[] = [mailboxPolicy.model, retentionPolicy.model, branding.model, setupState.model, HeartbeatModel, CounterModel];
