import { z } from 'zod';
import { setting } from '../define.js';

// Spec: Escrow records, Key escrow access, Limits (escrow approval age).
export const escrowSettings = {
  'mail:escrow:audit_hmac_key': setting(z.string(), {
    default: '',
    secret: true,
    doc: 'Key of the HMAC-SHA256 chain of the escrow audit log; empty means a plain SHA-256 chain (anyone with database access could rewrite it consistently).',
  }),
  'mail:escrow:approval_ttl_hours': setting(z.number().positive().max(8760), {
    default: 72,
    doc: 'An escrow approval counts for this many hours; every material read re-checks it.',
  }),
  'mail:escrow:min_approvals': setting(z.number().int().min(1).max(50), {
    default: 2,
    doc: 'Floor for M, the holder approvals an escrow scope requires, so that no single holder reads escrowed mail alone.',
  }),
  'mail:escrow:export_ttl_hours': setting(z.number().positive().max(8760), {
    default: 72,
    doc: 'A built matter export can be downloaded for this many hours; then the worker deletes it.',
  }),
  'mail:escrow:export_max_attempts': setting(z.number().int().positive().max(100), {
    default: 3,
    doc: 'Builds of a matter export the worker tries before the export is failed.',
  }),
  'mail:jobs:escrow_export:interval_seconds': setting(z.number().positive(), {
    default: 30,
    doc: 'Period of the matter-export job in the worker daemon (it also runs at once when woken).',
  }),
  'mail:jobs:escrow_export:lease_seconds': setting(z.number().int().positive(), {
    default: 900,
    doc: 'Lease on a claimed matter export; longer than a build so a live build is never taken over.',
  }),
};
