import { z } from 'zod';
import { setting } from '../define.js';

// Outbound (Spec: Outbound message, Versioning — mail transport providers, Limits).
const transportSettings = {
  'mail:transport:provider': setting(z.enum(['sendmail', 'api']), {
    default: 'sendmail',
    doc: 'How outbound mail leaves: sendmail (a sendmail-style command, the default) or api (a cloud mail API).',
  }),
  'mail:transport:sendmail:path': setting(z.string().min(1), {
    default: '/usr/sbin/sendmail',
    doc: 'The sendmail-style command (run as PATH -i -f FROM -- RCPT…, message on standard input).',
  }),
  'mail:transport:sendmail:timeout_ms': setting(z.number().int().positive(), {
    default: 60_000,
    doc: 'A sendmail run taking longer is killed and counts as a temporary failure.',
  }),
  'mail:transport:api:url': setting(z.union([z.url(), z.literal('')]), {
    default: '',
    doc: 'Cloud mail API endpoint (POST JSON {raw, envelopeFrom, envelopeTo}) for the api provider.',
  }),
  'mail:transport:api:token': setting(z.string(), { default: '', secret: true, doc: 'Bearer token of the cloud mail API.' }),
  'mail:transport:api:timeout_ms': setting(z.number().int().positive(), {
    default: 30_000,
    doc: 'Time limit of one cloud mail API call; beyond it the send is retried later.',
  }),
};

// The send path and the Outbox job (Spec: Outbound message; Limits — background send concurrency).
const sendJobSettings = {
  'mail:jobs:send:concurrency': setting(z.number().int().positive(), {
    default: 4,
    doc: 'Outbox messages one worker hands to the transport at the same time (Spec: Limits, concurrency).',
  }),
  'mail:jobs:send:drain_ms': setting(z.number().int().nonnegative(), {
    default: 10_000,
    doc: 'On shutdown the worker waits this long for sends in progress (Spec: Limits, drain_ms); an unfinished one is finished by the next worker.',
  }),
  'mail:jobs:send:interval_seconds': setting(z.number().positive(), {
    default: 5,
    doc: 'Period of the send job (Outbox, scheduled sends, relays of mail the service originates); it also runs at once when woken.',
  }),
  'mail:jobs:send:batch_size': setting(z.number().int().positive(), { default: 64, doc: 'Outbox records one worker claims per round.' }),
  'mail:jobs:send:lease_seconds': setting(z.number().int().positive(), {
    default: 180,
    doc: 'Lease on a claimed Outbox record; longer than a transport time limit so a live send is never taken over.',
  }),
  'mail:send:max_attempts': setting(z.number().int().positive(), {
    default: 8,
    doc: 'Transport attempts for temporarily failing recipients before they count as failed (a delivery status notification goes to the sender).',
  }),
  'mail:send:retry_backoff_seconds': setting(z.number().nonnegative(), {
    default: 60,
    doc: 'Backoff after a temporary transport failure: this × attempts.',
  }),
  'mail:send:rate_limit:max': setting(z.number().int().positive(), {
    default: 60,
    doc: 'Sends one user may start per window (POST /api/mail/messages/:id/send).',
  }),
  'mail:send:rate_limit:window_ms': setting(z.number().int().positive(), { default: 60_000, doc: 'Window of the per-user send limit.' }),
  'mail:transport:sendmail:log_path': setting(z.string(), {
    default: '',
    doc: "The MTA's log (Postfix maillog_file or /var/log/mail.log); set it in production. After a crash mid hand-off, or a sendmail run killed after it read the message, the send job looks for the Message-ID there: found counts as sent. Empty (the default): every such send ends in review (state review, the sender gets a notice to check and resend), never sent twice.",
  }),
};

export const sendSettings = { ...transportSettings, ...sendJobSettings };
