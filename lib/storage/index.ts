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

/** The SQL URL in force: empty means the embedded SQLite file under data_dir. */
export function sqlUrl(config: Config): string {
  const url = config.get('datastores:sql:url');
  return url || `sqlite:${join(resolve(config.get('data_dir')), 'svcmail.sqlite')}`;
}

/** Open the configured backend once at start; features only ever see the Store port. */
export async function openStore(config: Config, models: ModelDef[]): Promise<Store> {
  if (config.get('datastore') === 'document') {
    throw new ConfigError('datastore: the document backend (mongoose) is not available in this build; use sql');
  }
  const blobProblem = blobBackendProblem(config);
  if (blobProblem) throw new ConfigError(blobProblem);
  return openSqlStore({
    url: sqlUrl(config),
    models,
    synchronize: config.get('datastores:sql:synchronize'),
    poolSize: config.get('datastores:sql:pool_size'),
    preparedStatements: config.get('datastores:sql:prepared_statements'),
  });
}
export { queryableColumns } from './model.js';
export { openSqlStore } from './sql/open.js';
