import { z } from 'zod';
import { setting } from '../define.js';

const hostPort = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$|^\/.+/, 'must be host:port or an absolute unix socket path');
const tcpHostPort = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:\s/]+):\d{1,5}$/, 'must be host:port');

// Spec: Events (Push WebSocket, shared event channel) and Limits (push recheck, rate limiting). /push
// upgrades also count toward rateLimit (anonymous and failed ones per address) and rateLimit:authenticated.
export const pushSettings = {
  'listen:push': setting(hostPort, {
    default: '127.0.0.1:8082',
    doc: 'Address the push daemon (WebSocket /push) listens on; the api daemon forwards /push upgrades here when no nginx is in front.',
  }),
  'redis:url': setting(z.string(), {
    default: '',
    doc: 'Redis URL (redis://host:6379/0) for the shared event channel, the worker wake-ups (channel <redis:prefix>wake: every worker copy hears every wake-up), the rate-limit counters and the failed-attempt counters (Basic app passwords, wrong ingest secrets) between processes and hosts; empty uses the embedded hub on a unix socket under data_dir (one host only), the wake-up address, and counters per process. While Redis does not answer, rate limits fail open (requests pass, a warning is logged), Basic app-password checks fail closed (503 api-113), wrong ingest secrets are counted per process (mail keeps flowing), and wake-ups go to the local mail:jobs:wake_address. With redis:sentinels the host in this URL is not used: its password and database number are.',
  }),
  'redis:sentinels': setting(z.array(tcpHostPort), {
    default: [],
    doc: 'Redis Sentinel addresses (host:port): when set, every Redis connection asks them for the current master of redis:sentinel_name and follows a failover without a restart (the password and database come from redis:url).',
  }),
  'redis:sentinel_name': setting(z.string().min(1), {
    default: 'mymaster',
    doc: 'The master name the Sentinels monitor (sentinel monitor <name> …).',
  }),
  'redis:command_timeout_ms': setting(z.number().int().positive(), {
    default: 1000,
    doc: 'A rate-limit or failed-attempt counter command (Basic app passwords, wrong ingest secrets) that Redis has not answered within this time fails (see redis:url for what then happens).',
  }),
  'redis:prefix': setting(z.string(), {
    default: 'svcmail:',
    doc: 'Prefix of the Redis pub/sub channel names (events, <prefix>wake) and counter keys, so several deployments can share one Redis.',
  }),
  'events:hub:socket': setting(z.string(), {
    default: '',
    doc: 'Unix socket of the embedded event hub (used when redis:url is empty); empty means <data_dir>/run/events.sock. The first daemon to start hosts the hub.',
  }),
  'mail:push:recheck_ms': setting(z.number().int().positive(), {
    default: 60_000,
    doc: 'How often /push rechecks READ access of every subscribed channel; the socket closes when access is lost.',
  }),
  'mail:push:ping_ms': setting(z.number().int().positive(), {
    default: 30_000,
    doc: 'Keep-alive: /push pings every client this often and drops one that did not answer the previous ping.',
  }),
  'mail:push:login_timeout_ms': setting(z.number().int().positive(), {
    default: 10_000,
    doc: 'A /push socket opened without a token must send its LOGIN frame within this time.',
  }),
  'mail:push:max_unauthenticated_per_address': setting(z.number().int().positive(), {
    default: 50,
    doc: 'Most /push sockets one client address (an IPv6 address: its /64) may hold open without a token, waiting for their LOGIN frame; beyond it the upgrade is refused with 429 api-109 and Retry-After (the login timeout). A client that sends LOGIN at once needs one.',
  }),
  'mail:push:max_unauthenticated': setting(z.number().int().positive(), {
    default: 5000,
    doc: 'Most /push sockets the push daemon (each copy) holds open without a token, waiting for their LOGIN frame, from all addresses together; beyond it the upgrade is refused with 503 api-113 and Retry-After (the login timeout). Sockets signed in at the upgrade (cookie or Bearer) are not limited by it.',
  }),
  'mail:push:max_buffered_bytes': setting(z.number().int().positive(), {
    default: 1_048_576,
    doc: 'Back-pressure: a /push client whose unsent data passes this many bytes is dropped (close code 4508).',
  }),
  'mail:push:max_channels': setting(z.number().int().positive(), {
    default: 1000,
    doc: 'Most channels one /push socket may subscribe to.',
  }),
  'mail:push:max_frame_bytes': setting(z.number().int().positive(), { default: 65_536, doc: 'Largest client frame /push accepts.' }),
};
