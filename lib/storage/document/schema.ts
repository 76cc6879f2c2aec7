// Collections and indexes from the models (datastores:document:synchronize): the model's indexes,
// the lease index, one multikey index per value index and one on the full-text words (each model is
// also a mongoose Schema and model on the connection: models.ts). Synchronizing creates what is missing and reports what differs (an index of the same name with other keys or
// options, an index the models do not declare) instead of dropping anything: a dropped unique index
// could let duplicates in, and rebuilding one on a large collection is the administrator's call.
import type mongoose from 'mongoose';
import type { ColumnKind, ModelDef } from '../model.js';
import { cleanValue } from '../terms.js';
import { fromDocument, VALUES_FIELD, WORDS_FIELD } from './shape.js';
import { docField } from './translate.js';

export interface IndexSpec {
  name: string;
  key: Record<string, 1>;
  unique?: boolean;
  partialFilterExpression?: Record<string, unknown>;
}

const BSON_TYPE: Record<ColumnKind, string> = {
  text: 'string',
  integer: 'number',
  number: 'number',
  boolean: 'bool',
  date: 'date',
  json: 'string',
  bytes: 'binData',
};

const nameOf = (keys: string[]) => `svc_${keys.map((k) => k.replace(/[^A-Za-z0-9]/g, '_')).join('__')}`;

/** Every index a model's collection has: declared ones, the lease, value indexes, full-text words. */
export function indexSpecs(model: ModelDef): IndexSpec[] {
  const out: IndexSpec[] = [];
  for (const idx of model.indexes ?? []) {
    const key = Object.fromEntries(idx.fields.map((f) => [docField(f), 1 as const]));
    const spec: IndexSpec = { name: nameOf(idx.fields), key };
    if (idx.unique) {
      spec.unique = true;
      // SQL's unique indexes let NULLs repeat; MongoDB's would count null as a value: only records
      // with every field of the key set are in the index.
      const nullable = idx.fields.filter((f) => model.columns[f]?.nullable);
      if (nullable.length)
        spec.partialFilterExpression = Object.fromEntries(nullable.map((f) => [f, { $type: BSON_TYPE[model.columns[f].kind] }]));
    }
    out.push(spec);
  }
  if (model.lease) out.push({ name: nameOf(['leaseUntil']), key: { leaseUntil: 1 } });
  for (const vi of model.valueIndexes ?? []) {
    const keys = [...(vi.scope ? [vi.scope] : []), `${VALUES_FIELD}.${vi.name}`];
    out.push({ name: nameOf(keys), key: Object.fromEntries(keys.map((k) => [k, 1 as const])) });
  }
  if (model.fullText) out.push({ name: nameOf([WORDS_FIELD]), key: { [WORDS_FIELD]: 1 } });
  return out;
}

/** Server error codes of an index that exists with the same name or keys but other options. */
const INDEX_CONFLICT = new Set([85, 86]);
/** Server error code of a collection that exists already (another process made it first). */
const NAMESPACE_EXISTS = 48;

/** The database calls synchronize and inspect make (the driver's Db; the test stand-in has them too). */
export type SchemaDb = Pick<mongoose.mongo.Db, 'createCollection' | 'collection' | 'listCollections'>;

/**
 * Creates the collections and indexes the models declare; answers the differences left alone, one
 * line each (svcmail doctor shows them).
 */
export async function synchronize(db: SchemaDb, models: ModelDef[]): Promise<string[]> {
  const problems: string[] = [];
  for (const m of models) {
    await db.createCollection(m.table).catch((e: { code?: number }) => {
      if (e.code !== NAMESPACE_EXISTS) throw e;
    });
    for (const { key, ...options } of indexSpecs(m)) {
      try {
        await db.collection(m.table).createIndex(key, options);
      } catch (e) {
        if (!INDEX_CONFLICT.has((e as { code?: number }).code ?? 0)) throw e;
        problems.push(`${m.table}: index ${options.name} differs from the model's (${(e as Error).message}); left as it is`);
      }
    }
  }
  return [...problems, ...(await inspect(db, models)).filter((p) => p.includes('not declared'))];
}

/** What the database lacks or has otherwise than the models declare (nothing is changed): svcmail doctor's "schema in sync". */
export async function inspect(db: SchemaDb, models: readonly ModelDef[]): Promise<string[]> {
  const problems: string[] = [];
  const collections = new Set((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name));
  for (const m of models) {
    if (!collections.has(m.table)) {
      problems.push(`collection ${m.table} missing`);
      continue;
    }
    const present = new Map((await db.collection(m.table).indexes()).map((i) => [i.name ?? '', i]));
    const declared = indexSpecs(m);
    for (const spec of declared) {
      const idx = present.get(spec.name);
      if (!idx) problems.push(`${m.table}: index ${spec.name} missing`);
      else if (
        JSON.stringify(idx.key) !== JSON.stringify(spec.key) ||
        Boolean(idx.unique) !== Boolean(spec.unique) ||
        JSON.stringify(idx.partialFilterExpression ?? null) !== JSON.stringify(spec.partialFilterExpression ?? null)
      )
        problems.push(`${m.table}: index ${spec.name} differs from the model's; left as it is`);
    }
    const names = new Set(declared.map((d) => d.name));
    for (const name of present.keys())
      if (name !== '_id_' && !names.has(name)) problems.push(`${m.table}: index ${name} is not declared by the model; left as it is`);
  }
  return problems;
}

/**
 * Records written before their model declared a value index (or before a new one) get its values
 * (`_v.<name>`), computed from the record as stored: at every open, as the SQL adapter fills its
 * side table, in batches. Answers how many records were filled.
 */
export async function backfillValues(db: Pick<mongoose.mongo.Db, 'collection'>, models: readonly ModelDef[]): Promise<number> {
  let filled = 0;
  for (const m of models) {
    for (const vi of m.valueIndexes ?? []) {
      const coll = db.collection(m.table);
      const path = `${VALUES_FIELD}.${vi.name}`;
      for (;;) {
        const docs = await coll.find({ [path]: { $exists: false } }, { limit: 500 }).toArray();
        if (!docs.length) break;
        const ops = docs.map((d) => ({
          updateOne: {
            filter: { _id: d._id, [path]: { $exists: false } },
            update: { $set: { [path]: [...new Set(vi.values(fromDocument(m, d)).map(cleanValue))] } },
          },
        }));
        await coll.bulkWrite(ops as never, { ordered: false });
        filled += docs.length;
      }
    }
  }
  return filled;
}
