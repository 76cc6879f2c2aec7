// Opening the document store: the mongoose connection, the checks the backend needs (a server that
// answers, and a replica set or sharded cluster, since the port's transactions need one), the
// collections and indexes (datastores:document:synchronize), then the DocumentStore.
import mongoose from 'mongoose';
import { ConfigError } from '../../config/index.js';
import type { ModelDef } from '../model.js';
import { DocumentStore } from './adapter.js';
import { backfillValues, synchronize } from './schema.js';
import { schemaOf } from './models.js';

export interface DocumentStoreOptions {
  /** mongodb://… or mongodb+srv://… naming the database (default "svcmail"). */
  url: string;
  models: ModelDef[];
  synchronize: boolean;
  /** Connections per process (the driver's maxPoolSize). */
  poolSize?: number;
  /** How long start-up waits for the server (ms). */
  timeoutMs?: number;
}

/** The URL without its credentials, for messages. */
export function redactedUrl(url: string): string {
  return url.replace(/\/\/[^@/]*@/, '//');
}

/**
 * The database a URL names: its path, percent-decoded, or "svcmail". Not through `new URL`, which
 * refuses a list of hosts with ports (mongodb://h1:27017,h2:27017/db).
 */
export function databaseOf(url: string): string {
  const path = /^mongodb(?:\+srv)?:\/\/[^/?]*\/([^?]*)/.exec(url)?.[1] ?? '';
  return decodeURIComponent(path) || 'svcmail';
}

/** What a server's `hello` says about transactions: null when it can run them, else why not. */
export function transactionProblem(hello: Record<string, unknown>): string | null {
  if (typeof hello.setName === 'string' || hello.msg === 'isdbgrid') return null;
  return (
    'datastores:document:url names a standalone MongoDB server; svcmail needs transactions, which need a replica set: ' +
    'start mongod with --replSet <name>, run rs.initiate() once (a one-member set is enough), and add ?replicaSet=<name> to the URL'
  );
}

/** Opens the store; a server that does not answer or cannot run transactions fails with one line saying what to do. */
export async function openDocumentStore(opts: DocumentStoreOptions): Promise<DocumentStore> {
  if (!/^mongodb(\+srv)?:\/\//.test(opts.url))
    throw new ConfigError('datastores:document:url must be a mongodb:// or mongodb+srv:// URL (datastore: document)');
  const conn = mongoose.createConnection(opts.url, {
    // A timeout the URL gives (serverSelectionTimeoutMS=…) wins over the default.
    ...(/[?&]serverSelectionTimeoutMS=/i.test(opts.url) ? {} : { serverSelectionTimeoutMS: opts.timeoutMs ?? 10_000 }),
    maxPoolSize: opts.poolSize ?? 10,
    autoIndex: false,
    autoCreate: false,
    dbName: databaseOf(opts.url),
  });
  try {
    await conn.asPromise();
  } catch (e) {
    await conn.close().catch(() => undefined);
    throw new ConfigError(`datastores:document:url: MongoDB at ${redactedUrl(opts.url)} does not answer (${(e as Error).message})`);
  }
  try {
    // `hello` since MongoDB 4.4.2; older servers answer only the legacy isMaster.
    const admin = conn.db!.admin();
    const problem = transactionProblem(await admin.command({ hello: 1 }).catch(() => admin.command({ isMaster: 1 })));
    if (problem) throw new ConfigError(problem);
    for (const m of opts.models) if (!conn.models[m.name]) conn.model(m.name, schemaOf(m), m.table);
    const problems = opts.synchronize ? await synchronize(conn.db!, opts.models) : [];
    // With synchronize off (svcmail doctor's open) nothing is written.
    if (opts.synchronize) await backfillValues(conn.db!, opts.models);
    const db = conn.db!;
    const ctx = {
      client: conn.getClient(),
      db,
      models: new Map(opts.models.map((m) => [m.name, m])),
      session: null,
      bucket: (bucketName: string) => new mongoose.mongo.GridFSBucket(db, { bucketName }),
    };
    return new DocumentStore(ctx, problems, () => conn.close());
  } catch (e) {
    await conn.close().catch(() => undefined);
    throw e;
  }
}
