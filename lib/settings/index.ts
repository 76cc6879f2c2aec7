// Settings records: domains, the policy and branding singletons, counters and heartbeats — what
// the features read and lib/admin serves. Below lib/mail in the layer order.
import type { ModelDef } from '../storage/index.js';
import { branding } from './branding.js';
import { CounterModel } from './counters.js';
import { HeartbeatModel } from './heartbeat.js';
import { mailboxPolicy, retentionPolicy } from './policies.js';

export { domainsResource, DomainModel, domainFields } from './domains.js';
export { ADMIN_ONLY, domainName } from './shared.js';
export {
  defineSingleton,
  singletonRouter,
  type Singleton,
  type SingletonDecl,
  type SingletonRead,
  type SingletonView,
} from './singleton.js';
export {
  mailboxPolicy,
  readMailboxPolicy,
  retentionPolicy,
  readRetentionPolicy,
  retentionDays,
  RETENTION_CLASSES,
  ROLE_OF_CLASS,
  type MailboxPolicy,
  type RetentionPolicy,
  type RetentionClass,
} from './policies.js';
export { branding, readBranding, dataUrlBytes, type Branding } from './branding.js';
export {
  HeartbeatModel,
  startHeartbeat,
  listHeartbeats,
  isAlive,
  MISSED_BEATS,
  instanceUid,
  type Heartbeat,
  type HeartbeatWriter,
  type HeartbeatOptions,
} from './heartbeat.js';
export { CounterModel, countEvent, readCounter, COUNTERS, type CounterName } from './counters.js';

/** The settings records that are not resources (singletons, heartbeats, counters). */
export const SETTINGS_MODELS: ModelDef[] = [mailboxPolicy.model, retentionPolicy.model, branding.model, HeartbeatModel, CounterModel];
