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
