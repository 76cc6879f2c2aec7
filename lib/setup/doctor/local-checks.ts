import { X509Certificate } from 'node:crypto';
import { accessSync, constants, existsSync, mkdirSync, readFileSync, rmSync, statfsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DomainModel } from '../../settings/index.js';
import { productModels, productRegistry } from '../../catalog.js';
import { schema, type SettingName } from '../../config/index.js';
import { blobBackendProblem, BlobStore, openStoreToCheck, shownDatastoreUrl, type DocumentStore } from '../../storage/index.js';
import type { SqlStore } from '../../storage/index.js';
import { caDir, dkimKeyFiles } from '../../config/index.js';
import { fail, ok, skip, warn, type Check, type CheckResult, type DoctorContext } from './types.js';

const WEAK = new Set(['changeme', 'change-me', 'secret', 'password', 'default', 'test', 'example']);

/** A setting the configuration schema may not declare (a feature this build lacks); undefined when absent or unset. */
export function maybe<T = unknown>(ctx: DoctorContext, name: string): T | undefined {
  return name in schema ? (ctx.config.get(name as SettingName) as T) : undefined;
}

export const checkSecrets: Check = async ({ config }) => {
  const problems: string[] = [];
  for (const [name, decl] of Object.entries(schema) as [SettingName, (typeof schema)[SettingName]][]) {
    if (!('secret' in decl) || !decl.secret) continue;
    const value = config.get(name) as string | undefined;
    if (value === undefined) {
      if ('requiredInProduction' in decl && decl.requiredInProduction) problems.push(`${name} is not set`);
      continue;
    }
    if (value === '' && (decl.default === '' || decl.default === undefined)) continue; // optional secret left empty
    if (decl.default !== undefined && decl.default !== '' && value === decl.default) problems.push(`${name} is still its default`);
    else if (value.length < 16) problems.push(`${name} is shorter than 16 characters`);
    else if (WEAK.has(value.toLowerCase()) || /^(.)\1*$/.test(value)) problems.push(`${name} is trivially guessable`);
  }
  return problems.length
    ? fail(
        'secrets',
        'secrets strong and not default',
        problems.join('; '),
        'svcmail setup --rotate generates new ones (or svcmail config set <name> <random 32+ characters>), then svcmail restart',
      )
    : ok('secrets', 'secrets strong and not default', 'every secret is set, changed from its default and at least 16 characters');
};

export const checkDatastore: Check = async ({ config }) => {
  const title = 'datastore reachable, schema in sync';
  const shown = shownDatastoreUrl(config);
  const models = productModels(productRegistry());
  let store;
  try {
    store = await openStoreToCheck(config, models);
    await store.ping();
  } catch (e) {
    const setting = config.get('datastore') === 'document' ? 'datastores:document:url' : 'datastores:sql:url';
    return fail(
      'datastore',
      title,
      `${shown}: ${(e as Error).message}`,
      `start the database (or correct ${setting}) and run svcmail doctor again`,
    );
  }
  try {
    return store.kind === 'document'
      ? await documentSchema(store as DocumentStore, shown, models.length)
      : await sqlSchema(config, store as SqlStore, shown, models.length);
  } finally {
    await store.close();
  }
};

/** Spec: svcmail doctor, "schema in sync": every model's table and every column of it (the TypeORM entity built from the model, against information_schema / PRAGMA table_info). */
async function sqlSchema(config: DoctorContext['config'], store: SqlStore, shown: string, count: number): Promise<CheckResult> {
  const title = 'datastore reachable, schema in sync';
  const gaps = await store.schemaGaps();
  if (!gaps.length) return ok('datastore', title, `${shown}: answers; ${count} models, every table and column present`);
  const tables = gaps.filter((g) => g.tableMissing).map((g) => g.table);
  const columns = gaps.filter((g) => !g.tableMissing).flatMap((g) => g.missing.map((c) => `${g.table}.${c}`));
  const what = [tables.length ? `tables missing: ${list(tables)}` : '', columns.length ? `columns missing: ${list(columns)}` : '']
    .filter(Boolean)
    .join('; ');
  const sync = config.get('datastores:sql:synchronize') ? '' : 'svcmail config set datastores:sql:synchronize true, then ';
  return fail(
    'datastore',
    title,
    `${shown}: ${what}`,
    `${sync}start a daemon once with synchronize on (svcmail restart api): it creates the missing tables and columns at start`,
  );
}

/** The document backend: a replica set (checked on opening), every collection and index the models declare. */
async function documentSchema(store: DocumentStore, shown: string, count: number): Promise<CheckResult> {
  const title = 'datastore reachable, schema in sync';
  const problems = await store.schemaProblems();
  const version = await store.serverVersion();
  if (!problems.length)
    return ok('datastore', title, `${shown}: ${version}, a replica set; ${count} models, every collection and index present`);
  const missing = problems.filter((p) => p.endsWith('missing'));
  if (!missing.length)
    return warn(
      'datastore',
      title,
      `${shown}: ${list(problems)}`,
      'compare the indexes named with the models (docs/STORAGE.md) and change them by hand if they should match',
    );
  return fail(
    'datastore',
    title,
    `${shown}: ${list(missing)}`,
    'start a daemon once with datastores:document:synchronize on (svcmail restart api): it creates the missing collections and indexes at start',
  );
}

/** A database never synchronised lacks everything: name a few, not a hundred. */
const list = (xs: string[]) => (xs.length > 8 ? `${xs.length} (${xs.slice(0, 5).join(', ')}, …)` : xs.join(', '));

export const checkBlobStore: Check = async ({ config }) => {
  const title = 'blob store writable with free space';
  const problem = blobBackendProblem(config);
  if (problem) return fail('blobs', title, problem, 'set mail:blobs:backend to "files", or use the datastore it names');
  // mail:blobs:dir, else <data_dir>/blobs; with blobs in the database only streamed uploads wait here.
  const dir = new BlobStore(config).root;
  try {
    mkdirSync(dir, { recursive: true });
    const probe = join(dir, `.doctor-${process.pid}`);
    writeFileSync(probe, 'ok');
    rmSync(probe);
  } catch (e) {
    return fail('blobs', title, `${dir}: ${(e as Error).message}`, `make ${dir} writable by the svcmail user (chown svcmail: ${dir})`);
  }
  const fs = statfsSync(dir);
  const free = fs.bavail * fs.bsize;
  const need = config.get('mail:doctor:min_free_bytes');
  const gib = (n: number) => `${(n / 2 ** 30).toFixed(1)} GiB`;
  return free < need
    ? fail(
        'blobs',
        title,
        `${dir}: ${gib(free)} free, below ${gib(need)}`,
        'free space or move mail:blobs:dir (or data_dir) to a larger file system',
      )
    : ok(
        'blobs',
        title,
        {
          files: `${dir}: writable, ${gib(free)} free`,
          database: `in the database (blob_chunks); uploads staged in ${dir}: writable, ${gib(free)} free`,
          gridfs: `in GridFS (bucket blobs); uploads staged in ${dir}: writable, ${gib(free)} free`,
        }[config.get('mail:blobs:backend')],
      );
};

function modeProblem(file: string): string | null {
  const mode = statSync(file).mode & 0o777;
  return mode & 0o077 ? `${file} is mode ${mode.toString(8)}, readable by others` : null;
}

export const checkCa: Check = async (ctx) => {
  const title = 'local CA present and not near expiry';
  if ((maybe<string>(ctx, 'mail:pki:backend') ?? 'local') !== 'local') return skip('ca', title, 'mail:pki:backend is not local');
  const dir = caDir(ctx.config);
  const crt = join(dir, 'ca.crt');
  const key = join(dir, 'ca.key');
  if (!existsSync(crt) || !existsSync(key))
    return fail('ca', title, `${dir}: ca.crt or ca.key missing`, 'svcmail setup creates the local CA');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(readFileSync(crt));
  } catch (e) {
    return fail('ca', title, `${crt}: ${(e as Error).message}`, 'move the broken CA aside and run svcmail setup --rotate');
  }
  const left = (Date.parse(cert.validTo) - (ctx.now?.() ?? Date.now())) / 86_400_000;
  const mode = modeProblem(key);
  if (mode) return fail('ca', title, mode, `chmod 600 ${key}`);
  if (left < ctx.config.get('mail:doctor:cert_warn_days'))
    return fail('ca', title, `${crt} expires in ${Math.floor(left)} days (${cert.validTo})`, 'svcmail setup --rotate issues a new CA');
  return ok('ca', title, `${crt}: valid until ${cert.validTo}`);
};

export const checkDkim: Check = async ({ config }) => {
  const title = 'DKIM key per domain';
  let store;
  try {
    store = await openStoreToCheck(config, productModels(productRegistry()));
  } catch {
    return skip('dkim', title, 'the datastore does not answer (see above)');
  }
  try {
    const domains = await store
      .repo<{ name: string; dkimSelector: string; dkimPublicKey?: string | null }>(DomainModel)
      .list({ limit: 10_000 })
      .catch(() => []);
    if (domains.length === 0) return fail('dkim', title, 'no domain is served', 'svcmail setup --domain example.org');
    const out: CheckResult[] = [];
    for (const d of domains) {
      const files = dkimKeyFiles(config, d.name, d.dkimSelector);
      if (!existsSync(files.key) || !existsSync(files.pub))
        out.push(fail(`dkim:${d.name}`, `DKIM key of ${d.name}`, `${files.key} missing`, `svcmail setup --domain ${d.name}`));
      else if (modeProblem(files.key))
        out.push(fail(`dkim:${d.name}`, `DKIM key of ${d.name}`, modeProblem(files.key)!, `chmod 600 ${files.key}`));
      else if (d.dkimPublicKey && d.dkimPublicKey.trim() !== readFileSync(files.pub, 'utf8').trim())
        out.push(
          warn(
            `dkim:${d.name}`,
            `DKIM key of ${d.name}`,
            'the stored public key differs from the key file',
            `svcmail setup --domain ${d.name} records the key file's public key`,
          ),
        );
      else out.push(ok(`dkim:${d.name}`, `DKIM key of ${d.name}`, `${files.key} (selector ${d.dkimSelector})`));
    }
    return out;
  } finally {
    await store.close();
  }
};

export const checkTransport: Check = async (ctx) => {
  const title = 'transport command present';
  const provider = maybe<string>(ctx, 'mail:transport:provider');
  const path = maybe<string>(ctx, 'mail:transport:sendmail:path');
  if (path === undefined) return skip('transport', title, 'no outbound transport in this build');
  if (provider !== undefined && provider !== 'sendmail') return skip('transport', title, `mail:transport:provider is ${provider}`);
  const bin = path.split(/\s+/)[0];
  try {
    accessSync(bin, constants.X_OK);
    return ok('transport', title, `${bin} is executable`);
  } catch {
    return fail(
      'transport',
      title,
      `${bin} is missing or not executable`,
      'install the MTA (apt install postfix) or set mail:transport:sendmail:path',
    );
  }
};
