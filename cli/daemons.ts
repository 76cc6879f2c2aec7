/**
 * The node arguments every daemon runs with, here and in the systemd units and the pm2 ecosystem
 * (test/integration/appliance checks they agree). --max-semi-space-size=4 caps V8's young generation
 * at 4 MiB semi-spaces: the start-up's garbage grows them to 16 MiB, which then stay resident, some
 * 25 MiB of each daemon's idle RSS (npm run bench -- memory).
 */
export const DAEMON_NODE_ARGS = ['--max-semi-space-size=4'] as const;

/** The daemons `svcmail start` supervises, one entry each; a new daemon adds its entry here. */
export const DAEMONS = [
  { name: 'api', bin: 'svcmail-api.js', summary: 'HTTP API, /internal/mta hand-off, pages' },
  { name: 'worker', bin: 'svcmail-worker.js', summary: 'jobs: ingest scan and delivery (every 10 s and when woken)' },
  { name: 'push', bin: 'svcmail-push.js', summary: 'WebSocket /push fed by the shared event channel' },
  {
    name: 'protocols',
    bin: 'svcmail-protocols.js',
    summary: 'protocol plugins at their exact paths: /Vendor-Server-ActiveSync, /mapi, /autodiscover',
  },
] as const;

export type DaemonName = (typeof DAEMONS)[number]['name'];
