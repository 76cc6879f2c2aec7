import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { freshPostgres, postgresAvailable } from '../../helpers/databases.js';

// Spec: What the service does, 7 (the schema is created from the models at startup): the four
// daemons of a fresh appliance open one brand-new PostgreSQL database at the same moment, each
// synchronizing the schema. An advisory lock serialises the synchronization across processes and
// hosts, so every one of them starts.

const pgHere = await postgresAvailable();

describe.skipIf(!pgHere)('schema synchronization on a brand-new PostgreSQL database', () => {
  it('four stores opened at once all start, and the schema is complete and made once', async () => {
    const db = await freshPostgres();
    const models = productModels(productRegistry());
    try {
      for (let round = 0; round < 2; round++) {
        // round 0: a brand-new database; round 1: an existing schema opened by four at once again
        const opened = await Promise.allSettled(
          [1, 2, 3, 4].map(() => openSqlStore({ url: db.url, models, synchronize: true, poolSize: 2 })),
        );
        const failed = opened.filter((o) => o.status === 'rejected').map((o) => String((o as PromiseRejectedResult).reason));
        expect(failed, `round ${round}`).toEqual([]);
        const stores = opened.map((o) => (o as PromiseFulfilledResult<Awaited<ReturnType<typeof openSqlStore>>>).value);
        await Promise.all(stores.map((s) => s.close()));
      }
      const c = new pg.Client({ connectionString: db.url });
      await c.connect();
      const tables = (await c.query("SELECT count(*)::int AS n FROM information_schema.tables WHERE table_schema = 'public'")).rows[0]
        .n as number;
      await c.end();
      expect(tables).toBeGreaterThanOrEqual(models.length);
    } finally {
      await db.drop();
    }
  }, 120_000);
});
