// Writes of several records at once on the document backend (Repo createMany, createOrAddMany,
// incrementMany, releaseMany): bulk writes, inside one transaction where the port promises
// "together" (MongoDB's bulk writes are not atomic by themselves).
import { ApiError } from '../../errors/index.js';
import { touchesValues, type ModelDef } from '../model.js';
import { clashes, newRecord, sessionOf, type Collection, type Ctx } from './context.js';
import { isDuplicateKey } from './errors.js';
import { fromDocument, setOf, toDocument, type Doc } from './shape.js';
import { HIDDEN, RACE_ATTEMPTS } from './writes.js';
import type { MongoFilter } from './translate.js';

/** What these writes need of a repo (DocumentRepo hands over its own). */
export interface RepoParts {
  ctx: Ctx;
  model: ModelDef;
  coll: Collection;
  /** fn in the caller's transaction, else in a new one. */
  atomic<R>(fn: (ctx: Ctx) => Promise<R>): Promise<R>;
  /** A patch that changes value-index fields, applied record by record (adapter.ts rewrite). */
  rewrite(ctx: Ctx, filter: MongoFilter, patch: Record<string, unknown>, exact: boolean): Promise<Record<string, unknown>[]>;
}

/** The inserted records of an unordered insertMany that met duplicate keys (others fail the call). */
function insertedOf(e: unknown, count: number): Set<number> {
  if (!isDuplicateKey(e)) throw e;
  const failed = new Set(((e as { writeErrors?: Array<{ index: number; code?: number }> }).writeErrors ?? []).map((w) => w.index));
  const errs = (e as { writeErrors?: Array<{ code?: number }> }).writeErrors ?? [];
  if (errs.some((w) => w.code !== 11000)) throw e;
  return new Set(Array.from({ length: count }, (_, i) => i).filter((i) => !failed.has(i)));
}

/**
 * Creates every record or none (api-112), in one transaction; skipExisting: each record a unique key
 * refuses is left out (outside a transaction one unordered insertMany, its duplicate-key failures
 * being the records left out; inside one they are looked for first, since a failed write would
 * abort the caller's transaction). Answers the records written, in the order given.
 */
export async function createMany(p: RepoParts, recs: Record<string, unknown>[], skipExisting: boolean): Promise<Record<string, unknown>[]> {
  const docs = recs.map((r) => toDocument(p.model, r));
  if (skipExisting && !p.ctx.session) {
    let written: Set<number>;
    try {
      await p.coll.insertMany(docs, { ordered: false });
      written = new Set(docs.map((_, i) => i));
    } catch (e) {
      written = insertedOf(e, docs.length);
    }
    return recs.filter((_, i) => written.has(i));
  }
  return p.atomic(async (ctx) => {
    const refused = await clashes(p.coll, p.model, docs, ctx.session!);
    if (refused.size && !skipExisting) throw new ApiError('api-112');
    const kept = docs.filter((_, i) => !refused.has(i));
    for (let i = 0; i < kept.length; i += 1000) await p.coll.insertMany(kept.slice(i, i + 1000), { ordered: true, ...sessionOf(ctx) });
    return recs.filter((_, i) => !refused.has(i));
  });
}

/** The upsert of one createOrAdd: adding fields raised ($inc sets them on insert), the others set on insert only. */
export function upsertOf(model: ModelDef, rec: Record<string, unknown>, adding: string[], now: Date) {
  const doc = toDocument(model, rec);
  const onInsert: Doc = {};
  const inc: Record<string, number> = { version: 1 };
  for (const [field, v] of Object.entries(doc)) {
    if (field === '_id' || field === 'version' || field === 'updatedAt') continue;
    if (adding.includes(field)) inc[field] = Number(v ?? 0);
    else onInsert[field] = v;
  }
  return {
    filter: { _id: rec.uid } as MongoFilter,
    update: { $inc: inc, $set: { updatedAt: now }, $setOnInsert: onInsert },
    upsert: true,
  };
}

/**
 * createOrAdd of several records (several of one uid add up), together: one ordered bulk write of
 * upserts in uid order, in a transaction. Two first inserts of one uid racing each other: the loser
 * meets the winner's `_id` (E11000) and, outside a caller's transaction, is run again and adds.
 */
export async function createOrAddMany(
  p: RepoParts,
  data: Array<Record<string, unknown> & { uid: string }>,
  adding: string[],
): Promise<void> {
  for (const f of adding) if (!(f in p.model.columns)) throw new Error(`createOrAdd ${f}: not a field`);
  const now = new Date();
  const merged = new Map<string, Record<string, unknown>>();
  for (const d of data) {
    const had = merged.get(d.uid);
    if (!had) merged.set(d.uid, { ...newRecord(p.model, d, now), uid: d.uid });
    else for (const f of adding) had[f] = Number(had[f] ?? 0) + Number(d[f] ?? 0);
  }
  if (!merged.size) return;
  const ops = [...merged.keys()].sort().map((uid) => ({ updateOne: upsertOf(p.model, merged.get(uid)!, adding, now) }));
  // One record outside a transaction: one upsert (the server itself runs again an _id upsert that
  // met a racing insert); several go together in a transaction.
  const write =
    ops.length === 1 && !p.ctx.session
      ? async () => void (await p.coll.updateOne(ops[0].updateOne.filter, ops[0].updateOne.update, { upsert: true }))
      : () => p.atomic(async (ctx) => void (await p.coll.bulkWrite(ops, { ordered: true, ...sessionOf(ctx) })));
  for (let attempt = 1; ; attempt++) {
    try {
      return await write();
    } catch (e) {
      // A first insert that lost to another one of the same uid (mapped to api-112 when it left a transaction).
      const lost = isDuplicateKey(e) || (e instanceof ApiError && e.code === 'api-112');
      if (p.ctx.session || !lost || attempt >= RACE_ATTEMPTS) throw e;
    }
  }
}

/** Raises records by their own amounts (several of one uid add up), together; answers the records written, in uid order. */
export async function incrementMany(
  p: RepoParts,
  changes: Array<{ uid: string; deltas: Record<string, number> }>,
): Promise<Record<string, unknown>[]> {
  const merged = new Map<string, Record<string, number>>();
  for (const c of changes) {
    const d = merged.get(c.uid) ?? {};
    for (const [f, n] of Object.entries(c.deltas)) {
      if (!Number.isFinite(n)) throw new Error(`increment ${f}: not a number`);
      d[f] = (d[f] ?? 0) + n;
    }
    merged.set(c.uid, d);
  }
  if (!merged.size) return [];
  const now = new Date();
  return p.atomic(async (ctx) => {
    const out: Record<string, unknown>[] = [];
    for (const uid of [...merged.keys()].sort()) {
      const doc = await p.coll.findOneAndUpdate(
        { _id: uid } as MongoFilter,
        { $inc: { ...merged.get(uid)!, version: 1 }, $set: { updatedAt: now } },
        { returnDocument: 'after', projection: HIDDEN, ...sessionOf(ctx) },
      );
      if (doc) out.push(fromDocument(p.model, doc));
    }
    return out;
  });
}

/** Releases the leases `owner` holds on these records, each with its patch, together; answers the uids released. */
export function releaseMany(
  p: RepoParts,
  items: Array<{ uid: string; patch?: Record<string, unknown> }>,
  owner: string,
): Promise<string[]> {
  const freed = { claimedBy: null, leaseUntil: null };
  const run = async (ctx: Ctx) => {
    const released: string[] = [];
    for (const item of items) {
      const filter = { _id: item.uid, claimedBy: owner } as MongoFilter;
      const patch = { ...(item.patch ?? {}), ...freed };
      if (touchesValues(p.model, patch)) {
        if ((await p.rewrite(ctx, filter, patch, false)).length) released.push(item.uid);
        continue;
      }
      const set = { ...setOf(p.model, patch), updatedAt: new Date() };
      if ((await p.coll.updateOne(filter, { $set: set, $inc: { version: 1 } }, sessionOf(ctx))).matchedCount) released.push(item.uid);
    }
    return released;
  };
  // One release without value-index fields is one write; several (or a rewrite) go together.
  return items.length === 1 && !touchesValues(p.model, { ...(items[0].patch ?? {}) }) ? run(p.ctx) : p.atomic(run);
}
