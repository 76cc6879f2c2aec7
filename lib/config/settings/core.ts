import { z } from 'zod';
import { setting } from '../define.js';

const hostPort = z.string().regex(/^(\[[0-9a-fA-F:]+\]|[^:\s]+):\d{1,5}$|^\/.+/, 'must be host:port or an absolute unix socket path');

// Spec: Authentication, Limits, Resources (datastores). Names are spelled as the spec spells them.
export const coreSettings = {
  data_dir: setting(z.string().min(1), {
    default: './data',
    doc: 'Directory for the embedded database, blobs and keys (systemd sets /var/lib/svcmail).',
  }),
  'listen:api': setting(hostPort, {
    default: '127.0.0.1:8080',
    doc: 'Address the api daemon listens on (host:port or a unix socket path).',
  }),
  'log:level': setting(z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']), {
    default: 'info',
    doc: 'Log level of every daemon.',
  }),
  body_limit_bytes: setting(z.number().int().positive(), { default: 1_048_576, doc: 'Largest JSON request body the API accepts.' }),
  request_timeout_ms: setting(z.number().int().nonnegative(), {
    default: 100_000,
    doc: 'A request not answered this long after its body arrived (a hanging datastore) gets 503 api-113; keep it above a synchronous send (mail:scan:timeout_ms + mail:transport:sendmail:timeout_ms) and below the 120 s svcmail deliver waits; 0 turns it off.',
  }),

  'auth:secret': setting(z.string().min(16, 'must be at least 16 characters'), {
    secret: true,
    requiredInProduction: true,
    doc: 'HS256 secret shared with the sign-in service; tokens signed with anything else are refused.',
  }),
  'auth:options:audience': setting(z.string().min(1), {
    default: 'localhost',
    doc: 'Required token audience: the mail domain, exactly as the sign-in service issues it.',
  }),
  'auth:options:issuer': setting(z.string().min(1), { default: 'localhost', doc: "Required token issuer: the sign-in service's host." }),
  'auth:allowQueryParam': setting(z.literal(false, { message: 'must stay false: tokens in the query string leak into logs' }), {
    default: false,
    doc: 'Tokens in the query string are refused; this must stay false.',
  }),
  trusted_roles: setting(z.array(z.string().min(1)), {
    default: ['admin'],
    doc: 'Roles that count only in elevated tokens and never grant access to mail.',
  }),
  'mail:security:hsts_max_age_seconds': setting(z.number().int().nonnegative(), {
    default: 31_536_000,
    doc: "Strict-Transport-Security max-age the api and protocols daemons send (one year; 0: none). Sent on every answer when the public URL (mail:base_url, else https://<mail:host>) is https, never when it is http; with neither set, only on requests that came over TLS (directly, or X-Forwarded-Proto https from trusted_proxies). The shipped nginx site sends its own HSTS and hides the daemons' one.",
  }),
  'mail:security:elevation_max_age_seconds': setting(z.number().int().positive(), {
    default: 900,
    doc: 'Maximum age of an elevation for sensitive administration (answer 403 api-104 beyond it).',
  }),
  'mail:dev_auto_login:enabled': setting(z.boolean(), {
    default: true,
    doc: 'From sources with NODE_ENV dev/development/test, sign every request without a token in as a development administrator.',
  }),
  'mail:dev_auto_login:roles': setting(z.array(z.string().min(1)), { default: ['admin'], doc: 'Roles of the development administrator.' }),
  'mail:dev_auto_login:uid': setting(z.string().min(1), { default: 'dev-admin', doc: 'User uid of the development administrator.' }),
  'mail:auth_server_url': setting(z.union([z.url(), z.literal('')]), {
    default: '',
    doc: 'Public URL of the sign-in service, answered by /.well-known/svc/server-info.',
  }),
  'cors:origins': setting(z.array(z.string().min(1)), {
    default: [],
    doc: 'Origins allowed for CORS and for /push WebSocket connections.',
  }),

  datastore: setting(z.enum(['sql', 'document']), {
    default: 'sql',
    doc: 'Storage backend chosen at start: sql (TypeORM: embedded SQLite or PostgreSQL) or document (mongoose: a MongoDB replica set, datastores:document:url). The document backend is verified without a MongoDB server (query translation against SQLite, the contract suite on an in-memory stand-in) and has not yet been run against a real replica set: see docs/STORAGE.md, The document backend.',
  }),
  'datastores:sql:url': setting(z.string(), {
    default: '',
    doc: 'SQL database URL: empty for the embedded SQLite file in data_dir, sqlite:/path/file.sqlite, or postgres://user@host/db; for a PostgreSQL server on this machine prefer its Unix socket, postgres://user@%2Fvar%2Frun%2Fpostgresql/db (each query costs the daemons less CPU than over 127.0.0.1).',
  }),
  'datastores:sql:synchronize': setting(z.boolean(), {
    default: true,
    doc: 'Create and update tables and columns from the models at start.',
  }),
  'datastores:sql:pool_size': setting(z.number().int().positive(), { default: 10, doc: 'PostgreSQL connection pool size per process.' }),
  'datastores:sql:prepared_statements': setting(z.boolean(), {
    default: true,
    doc: 'PostgreSQL: run reads as named prepared statements (parsed and planned once per connection). Turn off behind a pooler in transaction mode that cannot keep them (PgBouncer before 1.21).',
  }),
  'datastores:document:url': setting(z.string(), {
    default: '',
    doc: 'MongoDB URL for the document backend (datastore: document): mongodb://host1,host2/database?replicaSet=name or mongodb+srv://…; the database is the path (default svcmail). It must name a replica set or mongos (transactions need one); a standalone server is refused at start.',
  }),
  'datastores:document:synchronize': setting(z.boolean(), {
    default: true,
    doc: 'Create collections and indexes from the models at start; an index that differs from the model is reported (svcmail doctor), never dropped.',
  }),
};
