import { z } from 'zod';
import { setting } from '../define.js';

const hostName = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^(?=.{1,253}$)([a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z][a-z0-9-]{0,61}[a-z0-9]$/,
    'must be a host name such as mail.example.org',
  );
const nameserver = z
  .string()
  .regex(
    /^(\d{1,3}(\.\d{1,3}){3}|\[[0-9a-fA-F:]+\])(:\d{1,5})?$/,
    'must be an IP address with an optional :port, e.g. 127.0.0.1:53 or [::1]:53',
  );

// The appliance: what `svcmail setup` writes and `svcmail dns` / `svcmail doctor` read.
// Spec: Other shapes (DNS TXT record at _svc.<domain>), Limits (DKIM key), Versioning (local CA).
export const applianceSettings = {
  'mail:host': setting(z.union([hostName, z.literal('')]), {
    default: '',
    doc: 'Public host name of this server (MX target, host= of the _svc TXT record, autodiscover CNAME target).',
  }),
  'mail:base_url': setting(z.union([z.url(), z.literal('')]), {
    default: '',
    doc: 'Public base URL of the service (https://<host>); empty means https://<mail:host>.',
  }),
  'mail:server_id': setting(z.union([z.string().regex(/^[A-Za-z0-9_-]{8,64}$/, 'must be 8-64 letters, digits, - or _'), z.literal('')]), {
    default: '',
    doc: 'Identifier of this deployment, published as id= in the _svc.<domain> TXT record; svcmail setup generates it.',
  }),
  'mail:pki:local_ca:dir': setting(z.string(), {
    default: '',
    doc: 'Directory of the local P-256 CA (ca.crt, ca.key, mode 0600 key); empty means <data_dir>/pki/ca.',
  }),
  'mail:dkim:dir': setting(z.string(), {
    default: '',
    doc: 'Directory of the DKIM keys, one <domain>.<selector>.key (private, 0600) and .pub per domain; empty means <data_dir>/dkim.',
  }),
  'mail:blobs:dir': setting(z.string(), {
    default: '',
    doc: 'Directory of the blob store (raw messages, content-addressed; released files wait in released/); empty means <data_dir>/blobs. Copies of svcmail on several hosts share it: a file system with atomic rename and fsync that every host sees at once (a local disk, or NFSv4 mounted with sync and no attribute caching of directories), writable by the svcmail user.',
  }),
  'mail:blobs:backend': setting(z.enum(['files', 'database', 'gridfs']), {
    default: 'files',
    doc: 'Where blobs (raw messages) are kept: "files" in mail:blobs:dir; "database" as chunked records (table or collection blob_chunks) in the datastore, PostgreSQL or MongoDB; "gridfs" in the MongoDB replica set\'s GridFS bucket "blobs" (datastore: document only). The last two serve copies of svcmail on several hosts without a shared file system; they cost database space and I/O, so large installations on SQL share a file system instead.',
  }),
  'mail:lifecycle:dir': setting(z.string(), {
    default: '',
    doc: 'Directory of mailbox exports (exports/<uid>.zip) and import uploads waiting for the import job (imports/<uid>.upload); empty means <data_dir>. Shared by every host whose api or worker daemon serves lifecycle requests, like mail:blobs:dir.',
  }),
  'mail:escrow:export_dir': setting(z.string(), {
    default: '',
    doc: 'Directory of escrow matter exports (one folder per export); empty means <data_dir>/escrow-exports. Shared by every host, like mail:blobs:dir.',
  }),
  'mail:dkim:selector': setting(z.string().regex(/^[a-z0-9][a-z0-9-]{0,62}$/), {
    default: 'mail',
    doc: 'DKIM selector of the keys svcmail setup generates (the TXT record lives at <selector>._domainkey.<domain>).',
  }),
  'mail:dns:check_nameservers': setting(z.array(nameserver), {
    default: [],
    doc: 'Name servers svcmail dns --check and svcmail doctor ask (ip or ip:port); empty means the system resolvers.',
  }),
  'mail:doctor:max_clock_skew_seconds': setting(z.number().int().positive(), {
    default: 60,
    doc: 'Largest clock difference to the sign-in service svcmail doctor accepts (tokens carry iat/exp).',
  }),
  'mail:doctor:min_free_bytes': setting(z.number().int().nonnegative(), {
    default: 1_073_741_824,
    doc: 'Free space svcmail doctor requires on the file system of data_dir.',
  }),
  'mail:doctor:cert_warn_days': setting(z.number().int().positive(), {
    default: 30,
    doc: 'svcmail doctor fails when the CA certificate expires within this many days.',
  }),
};

/** Spec: Internal hand-off. Declared here because setup generates it; the inbound routes read it. */
export const INGEST_SECRET_DEFAULT = 'change-me-ingest-secret';
export const ingestSecretSetting = {
  'mail:transport:ingest:secret': setting(z.string().min(1), {
    default: INGEST_SECRET_DEFAULT,
    secret: true,
    doc: 'Bearer secret of /internal/mta/* (the MTA hand-off); outside development it must differ from its default and be at least 16 characters. svcmail setup generates it.',
  }),
};
