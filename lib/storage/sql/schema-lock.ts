import pg from 'pg';

/** Any constant: the advisory lock every svcmail process takes on PostgreSQL to change the schema. */
const SCHEMA_LOCK_KEY = 0x5c3a11;

/**
 * Runs `fn` holding a session-level advisory lock on a connection of its own, outside the pool (a
 * pool of one would otherwise wait for itself): the daemons of an appliance, and every copy on other
 * hosts, open one database at once, and TypeORM's synchronization of the same new tables side by side
 * fails with "already exists". The others wait here and then find the schema made; the lock goes
 * with its connection if the process dies.
 */
export async function underSchemaLock(url: string, fn: () => Promise<void>): Promise<void> {
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a lost lock connection fails the query below, not the process
  await client.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [SCHEMA_LOCK_KEY]);
    await fn();
  } finally {
    // ending the session releases the lock
    await client.end().catch(() => undefined);
  }
}
