import { isoDate } from '../http/index.js';
import { z } from 'zod';
import { SETUP_STEPS } from './setup-state.js';

// The administration answers as they go on the wire: the routes' response schemas.

export const setupView = z
  .object({
    setupRan: z.boolean(),
    complete: z.boolean(),
    completedAt: isoDate.nullable(),
    version: z.number().int(),
    mailboxes: z.number().int(),
    configuration: z.object({
      serverId: z.boolean(),
      host: z.string().nullable(),
      authServerUrl: z.string().nullable(),
      ingestSecretChanged: z.boolean(),
    }),
    ca: z.object({ backend: z.enum(['local', 'vault']), present: z.boolean(), detail: z.string() }),
    domains: z.array(
      z.object({
        name: z.string(),
        enabled: z.boolean(),
        verified: z.boolean(),
        dkimSelector: z.string(),
        dkimPublicKey: z.boolean(),
        dkimKeyFile: z.boolean(),
      }),
    ),
    dkim: z.object({ ready: z.array(z.string()), missing: z.array(z.string()) }),
    steps: z.array(z.object({ step: z.enum(SETUP_STEPS), done: z.boolean() })),
  })
  .describe(
    "setupRan: svcmail setup filled the configuration (server id, changed ingest secret, sign-in service); ca, domains and dkim are checked now; steps are the first-run guide's, complete when all are done.",
  );

const probe = z.object({ reachable: z.boolean(), detail: z.string(), ms: z.number().int() });
const byState = z.record(z.string(), z.number().int());

const daemonProcess = z.object({
  instance: z.string(),
  host: z.string(),
  pid: z.number().int(),
  version: z.string(),
  startedAt: isoDate,
  lastSeenAt: isoDate,
  ageSeconds: z.number().int(),
  intervalSeconds: z.number(),
  stoppedAt: isoDate.nullable(),
  alive: z.boolean(),
  details: z.record(z.string(), z.unknown()),
});

export const diagnosticsView = z.object({
  generatedAt: isoDate,
  status: z.enum(['ok', 'degraded']),
  problems: z.array(z.string()),
  versions: z.object({
    product: z.string(),
    name: z.string(),
    node: z.string(),
    datastore: z.object({ kind: z.string(), version: z.string() }),
  }),
  daemons: z.array(z.object({ daemon: z.string(), alive: z.number().int(), processes: z.array(daemonProcess) })),
  queues: z.object({ ingest: byState, outbound: byState, handoffs: byState }),
  scanners: z.object({ rspamd: probe, clamd: probe }),
  transport: probe.extend({ provider: z.string() }),
});
