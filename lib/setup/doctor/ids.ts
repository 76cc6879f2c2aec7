/** The doctor's checks by name, in report order: light enough for `svcmail --help` to load. */
export const CHECK_IDS = [
  'secrets',
  'datastore',
  'blobs',
  'daemons',
  'worker',
  'scanners',
  'transport',
  'signin',
  'ca',
  'dkim',
  'dns',
  'autodiscover',
  'redis',
] as const;
