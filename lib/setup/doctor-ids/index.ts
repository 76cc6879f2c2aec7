/** The doctor's checks by name, in report order. A folder of its own so the CLI's declarations (--help, --skip) load it without the checks (lib/setup/doctor loads the datastore, the PKI, the catalogue). */
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
  'activesync',
  'redis',
] as const;
