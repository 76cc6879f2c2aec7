// Properties of the list-query parser of the resource engine (lib/resources/query.ts): whatever a
// client puts in the query string, the answer is a catalogue error (400) or a store query that every
// SQL backend runs. Limits above 1000 are always refused (Spec: Generic resource routes).
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import { isApiError } from '../../../lib/errors/index.js';
import { LIST_LIMIT_MAX, parseListQuery, queryFields, RESERVED_PARAMS, type QueryParams } from '../../../lib/resources/query.js';
import type { ResourceDecl } from '../../../lib/resources/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import type { Store } from '../../../lib/storage/index.js';
import { sqlBackends, type TestDatabase } from '../../helpers/databases.js';

const RUNS = { numRuns: 120 };
const registry = productRegistry();
const decls = registry.all().filter((d) => Object.keys(queryFields(d)).length > 0);
const backends = await sqlBackends();

// Names a client may send: real fields, reserved words, prototype names, anything.
const nameOf = (d: ResourceDecl) =>
  fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...Object.keys(queryFields(d))) },
    fc.constantFrom(...RESERVED_PARAMS),
    fc.constantFrom('__proto__', 'constructor', 'toString', 'hasOwnProperty', 'valueOf', '', ' '),
    fc.string({ maxLength: 12 }),
  );
const scalarText = fc.oneof(
  fc.constantFrom(
    'null',
    'true',
    'false',
    '0',
    '1',
    '-1',
    '1.5',
    '1e309',
    'NaN',
    '',
    ' ',
    '2026-01-01',
    '2026-01-01T10:00:00Z',
    '+275760-09-13T00:00:00Z',
    '-271821-04-20',
    '0x10',
    '9007199254740993',
    '99999999999999999999',
    'a\u0000b',
  ),
  fc.integer().map(String),
  fc.string({ maxLength: 20 }),
);
const sortOf = (d: ResourceDecl) => {
  const field = fc.tuple(fc.constantFrom('', '-', '+'), nameOf(d)).map(([s, f]) => s + f);
  return fc.oneof(
    fc.array(field, { maxLength: 3 }).map((a) => a.join(',')),
    fc.dictionary(nameOf(d), fc.constantFrom(1, -1, 'asc', 'desc', 'ASC', 0, 'up', null)).map((o) => JSON.stringify(o)),
    fc.array(field, { maxLength: 3 }).map((a) => JSON.stringify(a)),
    fc.string({ maxLength: 20 }),
  );
};
const paramsOf = (d: ResourceDecl) =>
  fc
    .record({
      filters: fc.array(fc.tuple(nameOf(d), fc.oneof(scalarText, fc.array(scalarText, { minLength: 1, maxLength: 3 }))), { maxLength: 4 }),
      limit: fc.option(fc.oneof(fc.integer({ min: -5, max: 5000 }).map(String), scalarText), { nil: undefined }),
      page: fc.option(fc.oneof(fc.nat(2_000_000).map(String), scalarText), { nil: undefined }),
      sort: fc.option(sortOf(d), { nil: undefined }),
    })
    .map(({ filters, limit, page, sort }) => {
      const params: QueryParams = Object.fromEntries(filters);
      if (limit !== undefined) params.limit = limit;
      if (page !== undefined) params.page = page;
      if (sort !== undefined) params.sort = sort;
      return params;
    });
const declAndParams = fc.constantFrom(...decls).chain((d) => fc.tuple(fc.constant(d), paramsOf(d)));

function parse(d: ResourceDecl, params: QueryParams): ReturnType<typeof parseListQuery> | null {
  try {
    return parseListQuery(d, params);
  } catch (e) {
    // Refusals are catalogue errors with a 400 status, never anything else.
    expect(isApiError(e), `${d.name} ${JSON.stringify(params)}: ${(e as Error).stack}`).toBe(true);
    expect((e as { status: number }).status).toBe(400);
    return null;
  }
}

describe('list query parsing (fast-check)', () => {
  it('refuses any limit above 1000 (and below 1) with api-106', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...decls),
        fc.oneof(fc.integer({ min: LIST_LIMIT_MAX + 1, max: 10_000_000 }), fc.integer({ min: -1000, max: 0 })),
        (d, limit) => {
          expect(() => parseListQuery(d, { limit: String(limit) })).toThrow(expect.objectContaining({ code: 'api-106' }));
        },
      ),
      RUNS,
    );
  });

  it('throws nothing but catalogue errors, and what it accepts is a well-formed store query', () => {
    fc.assert(
      fc.property(declAndParams, ([d, params]) => {
        const q = parse(d, params);
        if (!q) return;
        const fields = queryFields(d);
        expect(Number.isInteger(q.limit) && q.limit >= 1 && q.limit <= LIST_LIMIT_MAX).toBe(true);
        expect(Number.isSafeInteger(q.offset) && q.offset >= 0 && q.offset % q.limit === 0).toBe(true);
        for (const s of q.sort ?? [])
          expect(Object.hasOwn(fields, s.field) && ['asc', 'desc'].includes(s.dir), JSON.stringify(s)).toBe(true);
        for (const [name, cond] of Object.entries(q.filter)) {
          expect(Object.hasOwn(fields, name), name).toBe(true);
          const col = fields[name];
          const values = cond !== null && typeof cond === 'object' && '$in' in cond ? cond.$in : [cond];
          for (const v of values) {
            if (v === null) expect(col.nullable, `${name} null`).toBe(true);
            else if (col.kind === 'integer') expect(Number.isInteger(v)).toBe(true);
            else if (col.kind === 'number') expect(Number.isFinite(v)).toBe(true);
            else if (col.kind === 'boolean') expect(typeof v).toBe('boolean');
            else if (col.kind === 'date') expect(v instanceof Date && !Number.isNaN(v.getTime())).toBe(true);
            else expect(typeof v).toBe('string');
          }
        }
      }),
      { numRuns: 400 },
    );
  });

  describe.each(backends)('accepted queries run on $name', (backend) => {
    let db: TestDatabase;
    let store: Store;
    beforeAll(async () => {
      db = await backend.open();
      store = await openSqlStore({ url: db.url, models: productModels(registry), synchronize: true });
    }, 60_000);
    afterAll(async () => {
      await store?.close();
      await db?.drop();
    });

    it('every query the parser accepts is one the store answers (list and count)', async () => {
      await fc.assert(
        fc.asyncProperty(declAndParams, async ([d, params]) => {
          const q = parse(d, params);
          if (!q) return;
          const repo = store.repo(d.model);
          expect(Array.isArray(await repo.list(q))).toBe(true);
          expect(await repo.count(q.filter)).toBeGreaterThanOrEqual(0);
        }),
        RUNS,
      );
    }, 60_000);
  });
});
