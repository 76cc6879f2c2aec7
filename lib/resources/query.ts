import { invalid } from '../errors/index.js';
import { queryableColumns, type ColumnInfo, type Filter, type ListQuery, type Scalar, type SortKey } from '../storage/index.js';
import type { ResourceDecl } from './define.js';

export const LIST_LIMIT_DEFAULT = 100;
export const LIST_LIMIT_MAX = 1000;
/** Query parameters with a meaning of their own; every other parameter filters by a field. */
export const RESERVED_PARAMS = new Set(['limit', 'page', 'sort', 'scope']);

export type QueryParams = Record<string, string | string[] | undefined>;

const fieldsOf = new WeakMap<ResourceDecl, Readonly<Record<string, ColumnInfo>>>();

/** Fields a client may filter and sort on: scalar columns that are not hidden (worked out once per declaration). */
export function queryFields(decl: ResourceDecl): Readonly<Record<string, ColumnInfo>> {
  let fields = fieldsOf.get(decl);
  if (!fields) {
    const hidden = new Set(decl.hiddenFields ?? []);
    fields = Object.freeze(
      Object.fromEntries(Object.entries(queryableColumns(decl.model)).filter(([k, c]) => c.kind !== 'json' && !hidden.has(k))),
    );
    fieldsOf.set(decl, fields);
  }
  return fields;
}

// What the SQL columns hold (lib/storage/sql/entities.ts): integer fields are bigint, the record
// version is integer, and PostgreSQL's timestamptz stops at 4713 BC. A value beyond them is the
// client's mistake (400), never the database's refusal (500); found by test/fuzz/targets/list-query.ts.
const intLimit = (field: string) => (field === 'version' ? 2 ** 31 - 1 : Number.MAX_SAFE_INTEGER);
const DATE_MIN = Date.UTC(-4712, 0, 1);

/** Reads an integer or number filter value; integers must fit the SQL column. */
function numberValue(field: string, col: ColumnInfo, raw: string): number {
  const n = Number(raw);
  if (raw.trim() === '' || !Number.isFinite(n) || (col.kind === 'integer' && !Number.isInteger(n)))
    throw invalid(`${field} must be ${col.kind === 'integer' ? 'an integer' : 'a number'}`, [{ path: field, message: 'not a number' }]);
  if (col.kind === 'integer' && Math.abs(n) > intLimit(field))
    throw invalid(`${field} must be between -${intLimit(field)} and ${intLimit(field)}`, [{ path: field, message: 'out of range' }]);
  return n;
}

/** Reads a boolean filter value: true/1 or false/0. */
function booleanValue(field: string, raw: string): boolean {
  if (raw === 'true' || raw === '1') return true;
  if (raw === 'false' || raw === '0') return false;
  throw invalid(`${field} must be true or false`, [{ path: field, message: 'not a boolean' }]);
}

/** Reads a date filter value, no earlier than PostgreSQL's timestamptz can hold. */
function dateValue(field: string, raw: string): Date {
  const t = Date.parse(raw);
  if (Number.isNaN(t)) throw invalid(`${field} must be a date`, [{ path: field, message: 'not a date' }]);
  if (t < DATE_MIN) throw invalid(`${field} must be a date after 4713 BC`, [{ path: field, message: 'out of range' }]);
  return new Date(t);
}

/** Reads a text filter value, refusing NUL characters. */
function textValue(field: string, raw: string): string {
  // PostgreSQL text cannot hold NUL (the query would fail with a 500).
  if (raw.includes('\0')) throw invalid(`${field} must not contain NUL characters`, [{ path: field, message: 'NUL character' }]);
  return raw;
}

/** Turns one query-string value into the field's type ("null" for a nullable field); a value that does not fit is a 400. */
function coerce(field: string, col: ColumnInfo, raw: string): Scalar {
  if (raw === 'null' && col.nullable) return null;
  switch (col.kind) {
    case 'integer':
    case 'number':
      return numberValue(field, col, raw);
    case 'boolean':
      return booleanValue(field, raw);
    case 'date':
      return dateValue(field, raw);
    default:
      return textValue(field, raw);
  }
}

function intParam(name: string, raw: string | string[] | undefined, dflt: number, min: number, max: number): number {
  if (raw === undefined) return dflt;
  const s = Array.isArray(raw) ? raw[0] : raw;
  if (!/^\d+$/.test(s)) throw invalid(`${name} must be a whole number`, [{ path: name, message: 'not a whole number' }]);
  const n = Number(s);
  if (n < min || n > max)
    throw invalid(`${name} must be between ${min} and ${max}`, [{ path: name, message: `out of range ${min}..${max}` }]);
  return n;
}

/** sort=field, sort=-field, sort=a,-b, or JSON: {"field":1,"other":-1} or ["field","-other"]. */
export function parseSort(raw: string | undefined, fields: Readonly<Record<string, ColumnInfo>>): SortKey[] {
  if (!raw) return [];
  let items: string[];
  const t = raw.trim();
  if (t.startsWith('{') || t.startsWith('[')) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(t);
    } catch {
      throw invalid('sort is not valid JSON', [{ path: 'sort', message: 'malformed JSON' }]);
    }
    if (Array.isArray(parsed) && parsed.every((x) => typeof x === 'string')) items = parsed;
    else if (parsed && typeof parsed === 'object' && !Array.isArray(parsed)) {
      items = Object.entries(parsed).map(([k, v]) => {
        if (v === -1 || v === 'desc' || v === 'DESC') return `-${k}`;
        if (v === 1 || v === 'asc' || v === 'ASC') return k;
        throw invalid(`sort direction of ${k} must be 1, -1, asc or desc`, [{ path: `sort.${k}`, message: 'bad direction' }]);
      });
    } else throw invalid('sort must be a field, -field, or a JSON object or array', [{ path: 'sort', message: 'bad form' }]);
  } else
    items = t
      .split(',')
      .map((x) => x.trim())
      .filter(Boolean);
  return items.map((item) => {
    const dir = item.startsWith('-') ? 'desc' : 'asc';
    const field = item.replace(/^[-+]/, '');
    // Own fields only: `in` would take toString, constructor or __proto__ for columns (a 500 from the store).
    if (!Object.hasOwn(fields, field)) throw invalid(`cannot sort on ${field}`, [{ path: 'sort', message: `unknown field ${field}` }]);
    return { field, dir };
  });
}

/** Turns list query parameters into a store query (Spec: limit default 100, max 1000; page zero-based). */
export function parseListQuery(decl: ResourceDecl, params: QueryParams): ListQuery & { limit: number; offset: number; filter: Filter } {
  const fields = queryFields(decl);
  const limit = intParam('limit', params.limit, LIST_LIMIT_DEFAULT, 1, LIST_LIMIT_MAX);
  const page = intParam('page', params.page, 0, 0, 1_000_000);
  const asked = parseSort(Array.isArray(params.sort) ? params.sort[0] : params.sort, fields);
  const sort = asked.length ? asked : [...(decl.defaultSort ?? [])];
  const filter: Filter = {};
  for (const [name, raw] of Object.entries(params)) {
    if (RESERVED_PARAMS.has(name) || raw === undefined) continue;
    const col = Object.hasOwn(fields, name) ? fields[name] : undefined;
    if (!col) throw invalid(`unknown query parameter ${name}`, [{ path: name, message: 'not a filterable field' }]);
    const values = (Array.isArray(raw) ? raw : [raw]).map((v) => coerce(name, col, v));
    filter[name] = values.length === 1 ? values[0] : { $in: values };
  }
  return { limit, offset: page * limit, sort, filter };
}
