import type mongoose from 'mongoose';
import { v7 as uuidv7 } from 'uuid';
import { ApiError } from '../../errors/index.js';
import { withDefaults, type ModelDef } from '../model.js';
import type { NewRecord } from '../port.js';
import { mapError } from './errors.js';
import { and, docField, type MongoFilter } from './translate.js';
import type { Doc } from './shape.js';

export type MongoClient = mongoose.mongo.MongoClient;
export type Db = mongoose.mongo.Db;
export type ClientSession = mongoose.mongo.ClientSession;
export type Collection = mongoose.mongo.Collection;

/** What a repo and its store share: the database, the models, and the transaction's session inside one. */
export interface Ctx {
  client: MongoClient;
  db: Db;
  models: Map<string, ModelDef>;
  /** Set inside Store.transaction: every call passes it. */
  session: ClientSession | null;
  /** A GridFS bucket of this database (made where mongoose is loaded: open.ts). */
  bucket(name: string): mongoose.mongo.GridFSBucket;
}

/** Options every driver call takes: the transaction's session inside one. */
export const sessionOf = (ctx: Ctx): { session?: ClientSession } => (ctx.session ? { session: ctx.session } : {});

/**
 * Runs fn with the driver's errors mapped (api-112, api-113), except one withTransaction acts on
 * (a write conflict, a lost connection inside a transaction): it goes to withTransaction as it is,
 * which runs the transaction again, and is mapped only if it still fails (runTransaction).
 */
export async function guarded<R>(fn: () => Promise<R>): Promise<R> {
  try {
    return await fn();
  } catch (e) {
    throw mapError(e, false);
  }
}

/** A new record with the model's defaults and the server's own fields. */
export function newRecord(model: ModelDef, data: NewRecord<object>, now: Date): Record<string, unknown> {
  const rec: Record<string, unknown> = {
    ...withDefaults(model, data as Record<string, unknown>),
    uid: (data as { uid?: string }).uid ?? uuidv7(),
    version: 1,
    createdAt: now,
    updatedAt: now,
  };
  if (model.lease) {
    rec.claimedBy ??= null;
    rec.leaseUntil ??= null;
  }
  return rec;
}

/** The unique keys of a model: uid, and each unique index's fields. */
function uniqueKeys(model: ModelDef): string[][] {
  return [['uid'], ...(model.indexes ?? []).filter((i) => i.unique).map((i) => i.fields)];
}

/** A document's value of a unique key, or null when a field of it is null (SQL's unique indexes, and ours, let NULLs repeat). */
function keyOf(doc: Doc, fields: string[]): string | null {
  const values = fields.map((f) => doc[docField(f)] ?? null);
  if (values.includes(null)) return null;
  return `${fields.join(',')}:${JSON.stringify(values)}`;
}

/**
 * Inside a transaction a duplicate-key error aborts the whole transaction, so a write whose caller
 * handles api-112 and goes on (a blob reference created meanwhile) first looks for the records its
 * unique keys would meet. A writer in another transaction meeting the same keys meanwhile gets a
 * write conflict, which withTransaction runs again from the start.
 * Answers the indexes (in docs) of the documents that clash with a stored record or an earlier one of docs.
 */
export async function clashes(coll: Collection, model: ModelDef, docs: Doc[], session: ClientSession): Promise<Set<number>> {
  const keys = uniqueKeys(model);
  const taken = new Set<string>();
  for (let i = 0; i < docs.length; i += 500) {
    const or: MongoFilter[] = docs
      .slice(i, i + 500)
      .flatMap((d) =>
        keys
          .filter((fields) => keyOf(d, fields) !== null)
          .map((fields) => Object.fromEntries(fields.map((f) => [docField(f), d[docField(f)]]))),
      );
    // MongoDB refuses an empty $or: no key to look for, nothing can clash.
    if (!or.length) continue;
    const projection = Object.fromEntries(keys.flat().map((f) => [docField(f), 1]));
    for (const found of await coll.find(and({ $or: or }), { projection, session }).toArray())
      for (const fields of keys) {
        const k = keyOf(found, fields);
        if (k !== null) taken.add(k);
      }
  }
  const out = new Set<number>();
  docs.forEach((d, i) => {
    const mine = keys.map((fields) => keyOf(d, fields)).filter((k): k is string => k !== null);
    if (mine.some((k) => taken.has(k))) out.add(i);
    else for (const k of mine) taken.add(k);
  });
  return out;
}

/** api-108 with the stored version, or api-107 when the record is gone. */
export async function staleOrGone(coll: Collection, uid: string, ctx: Ctx): Promise<ApiError> {
  const cur = await coll.findOne({ _id: uid } as MongoFilter, { projection: { version: 1 }, ...sessionOf(ctx) });
  if (!cur) return new ApiError('api-107', 'Not found');
  return new ApiError('api-108', `Version conflict: the record is at version ${String(cur.version)}`);
}
