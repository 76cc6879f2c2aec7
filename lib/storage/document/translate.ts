// The Store port's queries as MongoDB query documents: filters, sorts, value-index and full-text
// conditions. Pure functions (no driver), so test/unit/storage/document-*.test.ts evaluates what they
// produce with mingo against the records the SQL adapter answers for the same query.
//
// Where MongoDB's semantics differ from SQL's the translation follows SQL's: a NULL field matches
// neither `$in` nor `$nin` nor a comparison (MongoDB's `$nin` and `$gte: null` would match it), and
// a range on a multi-valued field needs one value inside the whole range (`$elemMatch`).
import { invalid } from '../../errors/index.js';
import { queryableColumns, type ColumnKind, type ModelDef, type ValueIndexDecl } from '../model.js';
import type { Condition, Filter, Scalar, SortKey } from '../port.js';
import { above, cleanValue, queryWords } from '../terms.js';
import { VALUES_FIELD, WORDS_FIELD, foldWord } from './shape.js';

export type MongoFilter = Record<string, unknown>;
export type MongoSort = Array<[string, 1 | -1]>;

/** The document field of a record field: uid is MongoDB's `_id`. */
export const docField = (field: string): string => (field === 'uid' ? '_id' : field);

/** A filter value as stored in a field of this kind (SQL compares by the column's type the same way). */
export function storedScalar(kind: ColumnKind, v: Scalar): unknown {
  if (v === null) return null;
  switch (kind) {
    case 'date':
      return v instanceof Date ? v : new Date(v as string | number);
    case 'integer':
    case 'number':
      return typeof v === 'number' ? v : Number(v);
    case 'boolean':
      return typeof v === 'boolean' ? v : Boolean(v);
    default:
      return v instanceof Date ? v.toISOString() : String(v);
  }
}

const RANGE_OPS = ['$gt', '$gte', '$lt', '$lte'] as const;

/** Matches no document (SQL's `1 = 0`). */
const NOTHING: MongoFilter = { _id: { $in: [] } };

function kindOf(model: ModelDef, field: string): ColumnKind {
  const kind = queryableColumns(model)[field]?.kind;
  if (!kind || kind === 'json' || kind === 'bytes') throw invalid(`cannot filter or sort on ${field}`);
  return kind;
}

/** No condition on the field (it holds for every record). */
const ALL = Symbol('all');

/** One field's condition: undefined when it holds for no record, ALL when for every one. */
function fieldCondition(kind: ColumnKind, cond: Condition, field: string): unknown {
  if (cond === null) return null;
  if (typeof cond !== 'object' || cond instanceof Date) return storedScalar(kind, cond);
  if ('$in' in cond) return { $in: (cond.$in ?? []).filter((v) => v !== null).map((v) => storedScalar(kind, v)) };
  if ('$nin' in cond) {
    const list = cond.$nin ?? [];
    // SQL: NOT IN () holds for every row; NOT IN (…, NULL) for none; otherwise not for a NULL field.
    if (!list.length) return ALL;
    if (list.includes(null)) return undefined;
    return { $nin: list.map((v) => storedScalar(kind, v)), $ne: null };
  }
  if ('$ne' in cond) return { $ne: storedScalar(kind, cond.$ne) };
  const range: Record<string, unknown> = {};
  for (const op of RANGE_OPS) {
    const v = (cond as Record<string, Scalar | undefined>)[op];
    if (v === undefined) continue;
    // SQL: a comparison with NULL is never true.
    if (v === null) return undefined;
    range[op] = storedScalar(kind, v);
  }
  if (!Object.keys(range).length) throw invalid(`unsupported condition on ${field}`);
  return range;
}

/** A value-index condition ($has / $prefix) on the record's array of that index's values. */
function valueCondition(vi: ValueIndexDecl, cond: Condition): unknown {
  if (cond === null || typeof cond !== 'object' || cond instanceof Date || !('$has' in cond || '$prefix' in cond)) {
    throw invalid(`${vi.name} is a value index: filter it with $has or $prefix`);
  }
  if ('$has' in cond) return cleanValue(String(cond.$has));
  const p = cleanValue(String(cond.$prefix));
  const hi = above(p);
  return { $elemMatch: hi === null ? { $gte: p } : { $gte: p, $lt: hi } };
}

/** The query document of a port filter (AND of its fields). */
export function filterOf(model: ModelDef, filter: Filter | undefined): MongoFilter {
  const out: MongoFilter = {};
  for (const [field, cond] of Object.entries(filter ?? {})) {
    const vi = model.valueIndexes?.find((v) => v.name === field);
    if (vi) {
      out[`${VALUES_FIELD}.${vi.name}`] = valueCondition(vi, cond);
      continue;
    }
    const c = fieldCondition(kindOf(model, field), cond, field);
    if (c === undefined) return { ...NOTHING };
    if (c !== ALL) out[docField(field)] = c;
  }
  return out;
}

/** Both filters must hold (keys of both kept apart under $and when they share a field). */
export function and(...filters: MongoFilter[]): MongoFilter {
  const parts = filters.filter((f) => Object.keys(f).length);
  if (parts.length <= 1) return { ...(parts[0] ?? {}) };
  const keys = parts.flatMap((f) => Object.keys(f));
  if (new Set(keys).size === keys.length) return Object.assign({}, ...parts) as MongoFilter;
  return { $and: parts };
}

/** The sort of a list: its keys, then uid in the first key's direction (as the SQL adapter orders). */
export function sortOf(model: ModelDef, sort: SortKey[] | undefined): MongoSort {
  const keys = [...(sort ?? [])];
  if (!keys.some((k) => k.field === 'uid')) keys.push({ field: 'uid', dir: keys[0]?.dir ?? 'asc' });
  return keys.map((k) => {
    kindOf(model, k.field);
    return [docField(k.field), k.dir === 'desc' ? -1 : 1];
  });
}

/** A lease over: never taken, or its time has passed. */
export function leaseOver(now: Date): MongoFilter {
  return { $or: [{ leaseUntil: null }, { leaseUntil: { $lt: now } }] };
}

/** Records whose document holds every word of the query, each also as a prefix; null when the query has no word. */
export function wordsFilter(text: string): MongoFilter | null {
  const words = queryWords(text).map(foldWord);
  if (!words.length) return null;
  return {
    $and: words.map((w) => {
      const hi = above(w);
      return { [WORDS_FIELD]: { $elemMatch: hi === null ? { $gte: w } : { $gte: w, $lt: hi } } };
    }),
  };
}
