import { join, resolve } from 'node:path';
import type { Config } from '../config/index.js';
import { ConfigError } from '../config/index.js';
import type { ModelDef } from './model.js';
import type { Store } from './port.js';
import { openSqlStore } from './sql/open.js';
import { blobBackendProblem } from './blob/database.js';

export * from './model.js';
export * from './port.js';
export {
  BlobStore,
  BlobWriter,
  BlobModel,
  addBlobRefs,
  dropBlobRef,
  type ReleasedBlob,
  type StoredBlob,
  type StagedBlob,
} from './blob/index.js';
export { blobInUse, releaseBlobs, sweepReleasedBlobs } from './blob/release.js';
export { BlobChunkModel, DatabaseBlobStore, blobBackendProblem, openBlobStore } from './blob/database.js';

/**
 * The settings that name a database by its URL: mongodb:// or mongodb+srv:// the document backend,
 * postgres:// or sqlite: the SQL one; null for any other scheme.
 */
export function datastoreSettings(url: string): Record<string, string> | null {
  if (/^mongodb(\+srv)?:\/\//.test(url)) return { datastore: 'document', 'datastores:document:url': url };
  if (/^(postgres(ql)?:\/\/|sqlite:)/.test(url)) return { datastore: 'sql', 'datastores:sql:url': url };
  return null;
}

/** The SQL URL in force: empty means the embedded SQLite file under data_dir. */
export function sqlUrl(config: Config): string {
  const url = config.get('datastores:sql:url');
  return url || `sqlite:${join(resolve(config.get('data_dir')), 'svcmail.sqlite')}`;
}

/** Open the configured backend once at start; features only ever see the Store port. */
export async function openStore(config: Config, models: ModelDef[]): Promise<Store> {
  const blobProblem = blobBackendProblem(config);
  if (blobProblem) throw new ConfigError(blobProblem);
  if (config.get('datastore') === 'document') {
    const url = config.get('datastores:document:url');
    if (!url) throw new ConfigError('datastore: document needs datastores:document:url (mongodb://host/db?replicaSet=…)');
    // Loaded only here: the SQL backend's daemons never load mongoose (30 MiB and 0.15 s each).
    const { openDocumentStore } = await import('./document/open.js');
    return openDocumentStore({ url, models, synchronize: config.get('datastores:document:synchronize') });
  }
  return openSqlStore({
    url: sqlUrl(config),
    models,
    synchronize: config.get('datastores:sql:synchronize'),
    poolSize: config.get('datastores:sql:pool_size'),
    preparedStatements: config.get('datastores:sql:prepared_statements'),
  });
}
/**
 * The configured backend opened for a check or a one-off command (svcmail doctor): nothing created or
 * changed (synchronize off), one connection.
 */
export async function openStoreToCheck(config: Config, models: ModelDef[]): Promise<Store> {
  if (config.get('datastore') === 'document') {
    const { openDocumentStore } = await import('./document/open.js');
    return openDocumentStore({ url: config.get('datastores:document:url'), models, synchronize: false, poolSize: 1, timeoutMs: 5000 });
  }
  return openSqlStore({ url: sqlUrl(config), models, synchronize: false, poolSize: 1 });
}

/** The datastore's URL for messages: credentials hidden. */
export function shownDatastoreUrl(config: Config): string {
  const url = config.get('datastore') === 'document' ? config.get('datastores:document:url') : sqlUrl(config);
  return url.replace(/\/\/([^:@/]+):[^@/]*@/, '//$1:****@');
}

export { queryableColumns } from './model.js';
export { openSqlStore } from './sql/open.js';
export type { DocumentStore } from './document/adapter.js';
export type { SqlStore } from './sql/adapter.js';
