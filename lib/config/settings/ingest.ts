import { z } from 'zod';
import { setting } from '../define.js';

const socketAddress = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:\s/]+):\d{1,5}$|^\/.+/, 'must be host:port or an absolute unix socket path');

// Spec: Internal mail hand-off, Inbound message state table, Trusting sender verification, Limits.
export const ingestSettings = {
  'mail:internal:allow_forwarded': setting(z.boolean(), {
    default: false,
    doc: 'Accept /internal/mta requests that carry proxy headers (X-Forwarded-For, Forwarded, X-Real-IP ...); off: such requests answer 403.',
  }),
  'mail:internal:max_failures': setting(z.number().int().positive(), {
    default: 10,
    doc: 'Wrong ingest secrets from one address within mail:internal:failure_window_seconds before further requests from it answer 429 api-109 (the right secret too, until the window ends). With redis:url every api copy counts together in Redis (<redis:prefix>fail:ingest:*); while Redis does not answer within redis:command_timeout_ms, each process counts on its own meanwhile (inbound mail keeps flowing). Without it each api process counts its own.',
  }),
  'mail:internal:failure_window_seconds': setting(z.number().int().positive(), {
    default: 300,
    doc: 'Window for counting wrong ingest secrets per address; it starts with the first wrong secret, and a locked-out address waits for its end.',
  }),
  'mail:ingest:max_message_bytes': setting(z.number().int().positive(), {
    default: 52_428_800,
    doc: 'Largest raw message POST /internal/mta/deliver accepts (answer 413 api-110 beyond it; svcmail deliver exits 69 then).',
  }),
  'mail:ingest:max_recipients': setting(z.number().int().positive(), { default: 1000, doc: 'Most recipients in one X-Envelope-To.' }),
  'mail:ingest:retry_backoff_seconds': setting(z.number().int().nonnegative(), {
    default: 60,
    doc: 'Wait before a failed ingest entry is tried again (multiplied by the attempt number).',
  }),
  'mail:ingest:max_attempts': setting(z.number().int().positive(), {
    default: 5,
    doc: 'Attempts before an ingest entry is marked failed (visible in the admin ingest queue).',
  }),
  'mail:jobs:scan:interval_seconds': setting(z.number().positive(), {
    default: 10,
    doc: 'Period of the scan job in the worker daemon (it also runs at once when woken: see mail:jobs:wake_address).',
  }),
  'mail:jobs:scan:batch_size': setting(z.number().int().positive(), { default: 64, doc: 'Ingest entries one worker claims per round.' }),
  'mail:jobs:scan:rounds_in_flight': setting(z.number().int().positive().max(16), {
    default: 2,
    doc: 'Rounds one worker runs side by side while the queue has work (one parses and scans while another writes to the database).',
  }),
  'mail:jobs:scan:concurrency': setting(z.number().int().positive(), {
    default: 8,
    doc: "Fewest scans one worker keeps in flight; it starts at this × rounds_in_flight and adapts to the scanners' latency up to max_concurrency.",
  }),
  'mail:jobs:scan:max_concurrency': setting(z.number().int().positive().max(1024), {
    default: 64,
    doc: 'Most scans one worker keeps in flight: the limit grows toward it while scanner latency holds steady (time spent waiting on DNS) and shrinks when latency climbs (the scanners are busy).',
  }),
  'mail:jobs:scan:lease_seconds': setting(z.number().int().positive(), {
    default: 120,
    doc: "Lease on a claimed ingest entry; a killed worker's entries are picked up again after it.",
  }),
  'mail:jobs:wake_address': setting(z.union([socketAddress, z.literal('')]), {
    default: '127.0.0.1:8091',
    doc: 'Where the worker daemon listens for wake-ups from the daemons on its host (host:port or unix socket; POST /wake/<scan|send|export|lifecycle> wakes that job, POST /wake every job; empty: no wake-ups here). With redis:url, wake-ups go instead to the Redis channel <redis:prefix>wake, which every worker copy on every host listens to; this address is then only the fallback for a wake-up that reached no worker there (Redis not connected, no answer within 500 ms, nobody listening). With neither, the jobs run on their periods only.',
  }),
  'mail:scan:rspamd:url': setting(z.url(), {
    default: 'http://127.0.0.1:11333',
    doc: 'rspamd normal worker; messages are POSTed to <url>/checkv2.',
  }),
  'mail:scan:rspamd:password': setting(z.string(), {
    default: '',
    secret: true,
    doc: 'rspamd controller password, sent as the Password header when set.',
  }),
  'mail:scan:clamd:address': setting(socketAddress, {
    default: '127.0.0.1:3310',
    doc: 'clamd address: host:port or a unix socket path (INSTREAM).',
  }),
  'mail:scan:timeout_ms': setting(z.number().int().positive(), { default: 30_000, doc: 'Time limit of one scanner call.' }),
  'mail:distribution_lists:max_depth': setting(z.number().int().positive().max(32), {
    default: 5,
    doc: 'Levels of nested distribution lists expanded; deeper members are ignored (cycles are always cut).',
  }),
  'mail:plus_addressing:enabled': setting(z.boolean(), { default: true, doc: 'user+tag@domain reaches the mailbox of user@domain.' }),
  'mail:security:trusted_authserv_id': setting(z.string(), {
    default: '',
    doc: 'authserv-id of the Authentication-Results header the inbound MTA writes; empty: no sender counts as verified.',
  }),
};
