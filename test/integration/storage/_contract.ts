// The Store contract's models and one store per describe: every contract file runs unchanged
// against every adapter (SQLite, PostgreSQL, and MongoDB when SVCMAIL_TEST_MONGO_URL names a replica set).
import { afterAll, beforeAll } from 'vitest';
import { z } from 'zod';
import { defineModel, type Repo, type Store } from '../../../lib/storage/index.js';
import { openStoreOf, storeBackends, type Backend, type TestDatabase } from '../../helpers/databases.js';

export const Thing = defineModel({
  name: 'contract_thing',
  table: 'contract_things',
  fields: {
    name: z.string(),
    owner: z.string(),
    size: z.number().int(),
    score: z.number().optional(),
    flagged: z.boolean().default(false),
    tags: z.array(z.string()).default([]),
    seenAt: z.date().nullable().optional(),
  },
  indexes: [{ fields: ['owner', 'size'] }, { fields: ['name'], unique: true }],
});

// Every column kind with values that are easy to get wrong on the way back: the read path's own
// decoding (PostgreSQL rows arrive as one JSON array each) must give back exactly what was written.
export const Value = defineModel({
  name: 'contract_value',
  table: 'contract_values',
  fields: {
    key: z.string(),
    text: z.string().nullable(),
    big: z.number().int(),
    real: z.number(),
    on: z.boolean(),
    meta: z.unknown(),
    at: z.date().nullable(),
  },
});
export type ValueT = { key: string; text: string | null; big: number; real: number; on: boolean; meta: unknown; at: Date | null };
export const VALUE_CASES: Array<Omit<ValueT, 'key'>> = [
  {
    text: 'quotes " \\ back\\slash, tab\t, newline\n, \u00e9\u4e2d\ud83d\udce8, \u2028',
    big: 2 ** 53 - 1,
    real: 0.1,
    on: true,
    meta: 'just a string',
    at: new Date('2026-01-02T03:04:05.678Z'),
  },
  { text: '', big: -5_000_000_000, real: -1.5e-7, on: false, meta: { nested: { list: [1, 'two', null, true] }, n: 1e300 }, at: null },
  { text: null, big: 0, real: 1e300, on: false, meta: [{ a: '"[]{}' }], at: new Date('1999-12-31T23:59:59.999Z') },
  { text: '{"not":"json to decode"}', big: 42, real: -0.5, on: true, meta: false, at: new Date(0) },
];

export const Job = defineModel({ name: 'contract_job', table: 'contract_jobs', fields: { state: z.string() }, lease: true });

export const Doc = defineModel({
  name: 'contract_doc',
  table: 'contract_docs',
  fields: { owner: z.string(), at: z.number().int() },
  fullText: true,
});

export type ThingT = z.infer<z.ZodObject<typeof Thing.fields>>;
export type JobT = { state: string; claimedBy?: string | null; leaseUntil?: Date | null };

export interface ContractStore {
  db: TestDatabase;
  store: Store;
  things: Repo<ThingT>;
  jobs: Repo<JobT>;
  docs: Repo<{ owner: string; at: number }>;
}

/** A fresh database with the contract's models, opened before the describe's tests and dropped after them. */
export function contractStore(backend: Backend): ContractStore {
  const f = {} as ContractStore;
  beforeAll(async () => {
    f.db = await backend.open();
    f.store = await openStoreOf(backend, f.db.url, [Thing, Job, Doc, Value]);
    f.things = f.store.repo<ThingT>(Thing);
    f.jobs = f.store.repo<JobT>(Job);
    f.docs = f.store.repo<{ owner: string; at: number }>(Doc);
  });
  afterAll(async () => {
    await f.store?.close();
    await f.db?.drop();
  });
  return f;
}

/**
 * The backends the contract runs on: SQLite, PostgreSQL, MongoDB when SVCMAIL_TEST_MONGO_URL names a
 * replica set, and the document adapter over the in-memory stand-in (test/helpers/mongo-memory.ts),
 * which runs the adapter's own logic on every machine.
 */
export const contractBackends = (): Promise<Backend[]> => storeBackends({ standIn: true });
