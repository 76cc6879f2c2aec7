import { z } from 'zod';
import { setting } from '../define.js';

// Administration (Spec: /api/system/ and /api/admin/ resource groups): the retention job,
// daemon heartbeats, diagnostics probes and the branding logo limit.
export const adminSettings = {
  'mail:jobs:retention:interval_seconds': setting(z.number().int().positive(), {
    default: 3600,
    doc: 'Period of the retention job (deletes messages past the retention policy age); one worker copy runs it per period.',
  }),
  'mail:jobs:retention:lease_seconds': setting(z.number().int().positive(), {
    default: 900,
    doc: "Lease of a retention run: another worker copy takes the job over only after a crashed holder's lease ends.",
  }),
  'mail:jobs:retention:batch_size': setting(z.number().int().positive().max(10_000), {
    default: 500,
    doc: 'Messages the retention job deletes per transaction.',
  }),
  'mail:jobs:eas_device_cleanup:device_ttl_days': setting(z.number().int().positive(), {
    default: 90,
    doc: 'Mobile-sync devices that have not synced for this many days are forgotten with their sync state (the device starts over with a full sync).',
  }),
  'mail:jobs:eas_device_cleanup:interval_seconds': setting(z.number().int().positive(), {
    default: 86_400,
    doc: 'How often the worker removes mobile-sync devices idle beyond mail:jobs:eas_device_cleanup:device_ttl_days.',
  }),
  'mail:jobs:blob_sweep:interval_seconds': setting(z.number().int().positive(), {
    default: 600,
    doc: 'Period of the blob sweep, which deletes the files of raw messages nothing needs any more once their grace period is over; one worker copy runs it per period.',
  }),
  'mail:jobs:blob_sweep:grace_seconds': setting(z.number().int().nonnegative(), {
    default: 900,
    doc: 'How long a released blob file is kept before the sweep deletes it: a record naming the same bytes that is committed meanwhile (the same message handed off again) gets it back.',
  }),
  'mail:heartbeat:interval_seconds': setting(z.number().int().positive(), {
    default: 30,
    doc: 'How often each daemon records its heartbeat; a daemon silent for three periods counts as down (diagnostics, svcmail doctor).',
  }),
  'mail:diagnostics:probe_timeout_ms': setting(z.number().int().positive(), {
    default: 3000,
    doc: 'Time limit of each scanner and transport probe of GET /api/admin/diagnostics.',
  }),
  'mail:branding:max_logo_bytes': setting(z.number().int().positive(), {
    default: 262_144,
    doc: 'Largest branding logo given as a data URL (decoded bytes); the JSON body must also fit body_limit_bytes.',
  }),
};
