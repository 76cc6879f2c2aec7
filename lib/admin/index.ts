import type { ModelDef } from '../storage/index.js';
import { SETTINGS_MODELS } from '../settings/index.js';
import { setupState } from './setup-state.js';

export { auditLogResource } from './audit-log.js';
export { Metrics, type StateGauge } from './metrics.js';
export { setupState, readSetup, changeSetup, SETUP_STEPS, type SetupStep } from './setup-state.js';
export { diagnostics, probeScanners, probeTransport, DAEMONS } from './diagnostics.js';
export { adminRouter } from './routes.js';
export { statusRouter } from './status-routes.js';

/** The administration records that are not resources: the settings records and the setup state. */
export const ADMIN_MODELS: ModelDef[] = [...SETTINGS_MODELS, setupState.model];
