// Writes shared by the repo and the several-record writes: the version bump every write makes, the
// read–recompute–write of value-index fields, and transactions run through withTransaction.
import type { TransactionOptions } from '../port.js';
import type { ModelDef } from '../model.js';
import { sessionOf, type Ctx } from './context.js';
import { mapError } from './errors.js';
import { fromDocument, setOf, valuesOf, VALUES_FIELD, WORDS_FIELD } from './shape.js';
import { and, type MongoFilter } from './translate.js';

/** Fields a read never answers: the value-index and word arrays. */
export const HIDDEN = { [VALUES_FIELD]: 0, [WORDS_FIELD]: 0 };

/** Every write raises version by one and moves updatedAt. */
export function bump(now = new Date()): { $inc: Record<string, number>; $set: Record<string, unknown> } {
  return { $inc: { version: 1 }, $set: { updatedAt: now } };
}

/** Attempts of a write that lost a race it wins when run again (a changed record, a racing first insert). */
export const RACE_ATTEMPTS = 5;

/**
 * The records matching `filter` with `patch` applied and their value-index values recomputed from
 * the record as patched: read, then written back only if unchanged meanwhile (its version), run
 * again for a record changed meanwhile unless `exact` (an expected version: then it is left out).
 * Answers the records written. `many`: every match, else the first.
 */
export async function rewrite(
  ctx: Ctx,
  model: ModelDef,
  filter: MongoFilter,
  patch: Record<string, unknown>,
  exact: boolean,
  many = false,
): Promise<Record<string, unknown>[]> {
  const coll = ctx.db.collection(model.table);
  const out: Record<string, unknown>[] = [];
  const set = setOf(model, patch);
  const docs = await coll.find(filter, { projection: HIDDEN, ...sessionOf(ctx), ...(many ? {} : { limit: 1 }) }).toArray();
  for (let doc of docs) {
    for (let attempt = 1; ; attempt++) {
      const merged = { ...fromDocument(model, doc), ...Object.fromEntries(Object.entries(patch).filter(([, v]) => v !== undefined)) };
      const { $inc, $set } = bump();
      const written = await coll.findOneAndUpdate(
        { _id: doc._id, version: doc.version } as MongoFilter,
        { $inc, $set: { ...set, [VALUES_FIELD]: valuesOf(model, merged), ...$set } },
        { returnDocument: 'after', projection: HIDDEN, ...sessionOf(ctx) },
      );
      if (written) {
        out.push(fromDocument(model, written));
        break;
      }
      const again =
        exact || attempt >= RACE_ATTEMPTS
          ? null
          : await coll.findOne(and(filter, { _id: doc._id }), { projection: HIDDEN, ...sessionOf(ctx) });
      if (!again) break;
      doc = again;
    }
  }
  return out;
}

/** The longest wait before a transaction is run again after a write conflict (ms; it doubles from 5 ms, with jitter). */
const RETRY_WAIT_MAX = 500;
/** How long a commit may wait for the majority (ms): a replica set without one fails the commit instead of hanging. */
const COMMIT_TIMEOUT = 30_000;

/**
 * Runs fn in a new transaction. withTransaction runs it again from the start after a transient error
 * (a write conflict with another transaction on the same record) — at once, so each run after the
 * first waits a random while that grows with the attempts: writers of one busy record (a folder's
 * counters) spread out instead of meeting again.
 */
export async function runTransaction<R>(ctx: Ctx, fn: (ctx: Ctx) => Promise<R>, opts: TransactionOptions = {}): Promise<R> {
  const session = ctx.client.startSession();
  let attempt = 0;
  try {
    return await session.withTransaction(
      async () => {
        if (attempt++ > 0) await new Promise((r) => setTimeout(r, Math.random() * Math.min(RETRY_WAIT_MAX, 5 * 2 ** attempt)));
        return fn({ ...ctx, session });
      },
      {
        readConcern: { level: 'snapshot' },
        // An asynchronous commit: acknowledged by the primary before it reaches the journal; the next
        // journaled write makes it durable (the journal is one sequence), as the port describes.
        writeConcern: opts.syncCommit === false ? { w: 1, j: false } : { w: 'majority', j: true },
        maxCommitTimeMS: COMMIT_TIMEOUT,
      },
    );
  } catch (e) {
    throw mapError(e);
  } finally {
    await session.endSession();
  }
}
