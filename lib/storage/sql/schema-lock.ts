/** Any constant: the advisory lock every svcmail process takes on PostgreSQL to change the schema. */
const SCHEMA_LOCK_KEY = 0x5c3a11;

/**
 * Runs `fn` holding a transaction-level advisory lock on a connection of its own, outside the pool (a
 * pool of one would otherwise wait for itself): the daemons of an appliance, and every copy on other
 * hosts, open one database at once, and TypeORM's synchronization of the same new tables side by side
 * fails with "already exists". The others wait here and then find the schema made. The lock ends
 * with its transaction — at COMMIT, or when the process dies — also behind a pooler in transaction
 * mode, where a session-level lock would outlive the client on the pooler's server connection.
 */
export async function underSchemaLock(url: string, fn: () => Promise<void>): Promise<void> {
  // Loaded here, on PostgreSQL only (TypeORM's driver loads it so too): a daemon on SQLite never needs pg.
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: url });
  client.on('error', () => undefined); // a lost lock connection fails the query below, not the process
  await client.connect();
  try {
    await client.query('BEGIN');
    await client.query('SELECT pg_advisory_xact_lock($1)', [SCHEMA_LOCK_KEY]);
    await fn();
    await client.query('COMMIT');
  } finally {
    // a failure leaves the transaction open: ending the connection rolls it back and frees the lock
    await client.end().catch(() => undefined);
  }
}
