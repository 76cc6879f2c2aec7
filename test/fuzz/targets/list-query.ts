// List queries (Spec: lists — limit, page, sort, filters by field): the query string of any generic
// list route, parsed as Express parses it ('simple' = node:querystring), turned into a store query
// by lib/resources parseListQuery (api-106 when refused), then run on a real store — SQLite, and
// PostgreSQL when it is reachable — so a value the parser lets through but the database refuses
// (a 500) is a finding too.
// Input: one byte choosing the resource, then the query string.
import { parse as parseQuery } from 'node:querystring';
import fc from 'fast-check';
import { productModels, productRegistry } from '../../../lib/catalog.js';
import type { ResourceDecl } from '../../../lib/resources/index.js';
import { parseListQuery, queryFields, type QueryParams } from '../../../lib/resources/query.js';
import type { Store } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { freshPostgres, freshSqlite, postgresAvailable, type TestDatabase } from '../../helpers/databases.js';
import { numberText, text, word } from '../grammar.js';
import { clientError, type FuzzTarget } from '../target.js';

const registry = productRegistry();
const decls: ResourceDecl[] = registry.all();
const fieldNames = [...new Set(decls.flatMap((d) => Object.keys(queryFields(d))))].sort();

const fieldValue = fc.oneof(
  numberText,
  fc.constantFrom(
    'true',
    'false',
    '1',
    '0',
    'null',
    'yes',
    '',
    '2026-01-01',
    '2026-01-01T00:00:00Z',
    '+275760-09-13T00:00:00.000Z',
    '-271821-04-20T00:00:00.000Z',
    '0000-01-01',
    '-000001-01-01T00:00:00Z',
    '9999-12-31T23:59:59.999Z',
    '1970-01-01',
    'Tue, 1 Jan 1 00:00:00 GMT',
    'inbox',
    'a\u0000b',
    '\u0000',
    '%',
    "'; DROP TABLE x; --",
    '\ud800',
  ),
  text(30),
);
const sortValue = fc.oneof(
  fc
    .array(
      fc.tuple(fc.constantFrom('', '-', '+'), fc.constantFrom(...fieldNames, 'nope')).map(([s, f]) => s + f),
      { maxLength: 3 },
    )
    .map((a) => a.join(',')),
  fc
    .dictionary(fc.constantFrom(...fieldNames), fc.constantFrom<unknown>(1, -1, 'asc', 'desc', 'DESC', 0, null, 'x'))
    .map((o) => JSON.stringify(o)),
  fc.array(fc.constantFrom(...fieldNames), { maxLength: 3 }).map((a) => JSON.stringify(a)),
  fc.constantFrom('{', '[1]', '{"__proto__":1}', '"x"', 'null', '{"constructor":1}'),
);
/** Query pairs for one resource: mostly its own fields (a field it lacks is a plain 400). */
const pairsFor = (fields: string[]) =>
  fc.array(
    fc.oneof(
      { arbitrary: fc.tuple(fc.constantFrom(...fields), fieldValue), weight: 6 },
      { arbitrary: fc.tuple(fc.constantFrom('limit', 'page'), numberText), weight: 2 },
      { arbitrary: fc.tuple(fc.constant('sort'), sortValue), weight: 2 },
      {
        arbitrary: fc.tuple(
          fc.oneof(word, fc.constantFrom(...fieldNames, '__proto__', 'constructor', 'hasOwnProperty', 'scope')),
          text(10),
        ),
        weight: 1,
      },
    ),
    { maxLength: 5 },
  );
const query = fc
  .nat(decls.length - 1)
  .chain((which) => fc.tuple(fc.constant(which), pairsFor(Object.keys(queryFields(decls[which]))), fc.boolean()))
  .map(([which, pairs, raw]) =>
    Buffer.concat([
      Buffer.from([which]),
      Buffer.from(
        pairs.map(([k, v]) => `${k}=${raw ? v.replace(/[&=]/g, '') : encodeURIComponent(v.replace(/[\ud800-\udfff]/g, '?'))}`).join('&'),
        'utf8',
      ),
    ]),
  );

let stores: Array<{ store: Store; db: TestDatabase }> = [];

const target: FuzzTarget = {
  name: 'list-query',
  expected: clientError('api-106'),
  generate: query,
  dictionary: ['&', '=', '%00', '%', 'sort=-', 'limit=1000', 'page=1000000', '[]', 'null', ...fieldNames.map((f) => `&${f}=`)],
  maxLength: 4096,
  async setup() {
    const dbs = [freshSqlite()];
    if (process.env.FUZZ_PG !== '0' && (await postgresAvailable().catch(() => false))) dbs.push(await freshPostgres());
    const models = productModels(registry);
    stores = await Promise.all(dbs.map(async (db) => ({ db, store: await openSqlStore({ url: db.url, models, synchronize: true }) })));
  },
  async teardown() {
    for (const s of stores) {
      await s.store.close();
      await s.db.drop();
    }
    stores = [];
  },
  async fuzz(data) {
    if (!data.length) return;
    const decl = decls[data[0] % decls.length];
    // Node's HTTP parser hands Express the URL as latin1 text; querystring decodes %XX as UTF-8.
    const params = parseQuery(data.subarray(1).toString('latin1')) as QueryParams;
    delete params.scope; // ?scope=admin is decided by the service before parsing (lib/resources service)
    const q = parseListQuery(decl, params);
    for (const { store } of stores) {
      const repo = store.repo<Record<string, unknown>>(decl.model);
      await repo.list(q);
      await repo.count(q.filter);
    }
  },
};
export default target;
