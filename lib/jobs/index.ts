import { JobScheduleModel } from './periodic.js';

export { runScanRound, drainQueue, workerId, writeRoundTexts, type ScanRound } from './scan.js';
export { runIfDue, startPeriodicJob, JobScheduleModel, type PeriodicJob, type PeriodicLoop, type JobSchedule } from './periodic.js';
export { blobSweepJob } from './blob-sweep.js';
export { startLeaseTakeover, takeOverDeadLeases, type LeaseTakeover } from './lease-takeover.js';
export { runRetention, retentionJob, legalHolds, isHeld, type RetentionResult } from './retention.js';

/** Records of the jobs themselves (schedules of the periodic jobs). */
export const JOB_MODELS = [JobScheduleModel];
export { startEscrowExportLoop } from './escrow-export.js';
export { startSendLoop } from './send.js';
export { startEnrollmentLoop, type EnrollmentLoop } from './signing-enrollment.js';
