import type { DataSource } from 'typeorm';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineModel, type Store } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { freshPostgres, overLocalSocket, postgresAvailable, type TestDatabase } from '../../helpers/databases.js';

// PostgreSQL reads run as named prepared statements unless datastores:sql:prepared_statements is off
// (a pooler in transaction mode cannot keep them). One pooled connection, so the session whose
// pg_prepared_statements is read is the one the reads ran on.
const Note = defineModel({ name: 'prepared_note', table: 'prepared_notes', fields: { owner: z.string(), n: z.number().int() } });
const available = await postgresAvailable();

const prepared = async (store: Store) => {
  const ds = (store as unknown as { ctx: { ds: DataSource } }).ctx.ds;
  return ((await ds.query('SELECT name FROM pg_prepared_statements')) as Array<{ name: string }>).map((r) => r.name);
};

describe.runIf(available)('PostgreSQL prepared reads', () => {
  let db: TestDatabase;
  beforeAll(async () => {
    db = await freshPostgres();
  });
  afterAll(async () => db?.drop());

  it("opens a store over the local server's Unix socket (datastores:sql:url with the socket directory as host)", async () => {
    const url = overLocalSocket(db.url);
    expect(url).toMatch(/^postgres:\/\/[^@]*@%2Fvar%2Frun%2Fpostgresql(:\d+)?\//);
    const store = await openSqlStore({ url, models: [Note], synchronize: true, poolSize: 1 });
    try {
      const notes = store.repo<{ owner: string; n: number }>(Note);
      await notes.create({ owner: 'socket', n: 7 });
      expect((await notes.list({ filter: { owner: 'socket' } })).map((r) => r.n)).toEqual([7]);
      const ds = (store as unknown as { ctx: { ds: DataSource } }).ctx.ds;
      expect(await ds.query('SELECT inet_server_addr() AS addr')).toEqual([{ addr: null }]); // null: not a TCP connection
    } finally {
      await store.close();
    }
  });

  for (const on of [true, false]) {
    it(`${on ? 'prepares' : 'does not prepare'} reads when prepared_statements is ${on}, answering the same rows`, async () => {
      const store = await openSqlStore({ url: db.url, models: [Note], synchronize: true, poolSize: 1, preparedStatements: on });
      try {
        const notes = store.repo<{ owner: string; n: number }>(Note);
        const a = await notes.create({ owner: `o-${on}`, n: 1 });
        await notes.increment(a.uid, { n: 41 });
        for (let i = 0; i < 3; i++) expect((await notes.list({ filter: { owner: `o-${on}` } })).map((r) => r.n)).toEqual([42]);
        expect((await notes.get(a.uid))?.n).toBe(42);
        const names = (await prepared(store)).filter((n) => n.startsWith('svc_'));
        if (on) expect(names.length).toBeGreaterThanOrEqual(2);
        else expect(names).toEqual([]);
      } finally {
        await store.close();
      }
    });
  }
});
