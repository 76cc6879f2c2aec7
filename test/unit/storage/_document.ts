// The document adapter's translations checked without a MongoDB server (none can be had here:
// ../shared/TESTING.md): the same records are written to SQLite through the SQL adapter and kept as
// the documents the document adapter would store; a query's answer from SQLite is compared with
// what mingo (MongoDB's query language in memory) answers for the query documents the adapter
// produces. Strings stay within the Basic Multilingual Plane below the surrogates, where mingo's
// comparison (UTF-16 code units) and MongoDB's (UTF-8 bytes) agree.
import { Query, updateOne } from 'mingo';
import mongoose from 'mongoose';
import { z } from 'zod';
import { defineModel, type ModelDef, type Repo, type Store, type ListQuery } from '../../../lib/storage/index.js';
import { openSqlStore } from '../../../lib/storage/sql/open.js';
import { toDocument, wordsOf, type Doc } from '../../../lib/storage/document/shape.js';
import { filterOf, sortOf, type MongoFilter } from '../../../lib/storage/document/translate.js';

const { BSON } = mongoose.mongo;

export const thingFields = {
  name: z.string(),
  owner: z.string(),
  size: z.number().int(),
  score: z.number().nullable().optional(),
  flagged: z.boolean().default(false),
  tags: z.array(z.string()).default([]),
  seenAt: z.date().nullable().optional(),
  to: z.array(z.string()).default([]),
};
export type ThingT = z.infer<z.ZodObject<typeof thingFields>>;

export const Thing = defineModel({
  name: 'doc_thing',
  table: 'doc_things',
  fields: thingFields,
  indexes: [{ fields: ['owner', 'size'] }, { fields: ['name'], unique: true }],
  lease: true,
  fullText: true,
  valueIndexes: [
    { name: 'labels', from: ['tags'], scope: 'owner', values: (r) => r.tags as string[] },
    { name: 'rcpt', from: ['to'], values: (r) => (r.to as string[]).map((a) => a.toLowerCase()) },
  ],
});

const OWNERS = ['o1', 'o2', 'Z', 'a', 'é', ''];
const WORDS = ['alpha', 'Alpine', 'beta', 'café', 'CAFE', 'zeta', 'élan', 'Ωmega', '中文', 'x1', 'x10', 'report'];

/** Deterministic, varied records: nulls, negatives, ties, non-ASCII text, shared and distinct values. */
export function things(n: number): ThingT[] {
  return Array.from({ length: n }, (_, i) => ({
    name: `${WORDS[i % WORDS.length]}-${i}`,
    owner: OWNERS[i % OWNERS.length],
    size: ((i * 7) % 11) - 3,
    score: i % 4 === 0 ? null : (i % 5) / 2,
    flagged: i % 3 === 0,
    tags: i % 5 === 0 ? [] : [WORDS[i % 7], WORDS[(i + 3) % WORDS.length]],
    seenAt: i % 6 === 0 ? null : new Date(Date.UTC(2026, 0, 1 + (i % 9), i % 24)),
    to: i % 4 === 1 ? [] : [`${OWNERS[i % 3]}user${i % 5}@Example.test`],
  }));
}

export interface Pair {
  store: Store;
  repo: Repo<ThingT>;
  /** The documents the document adapter would hold for the same records (refreshed by reload). */
  docs: Doc[];
  reload(): Promise<void>;
}

/** SQLite with the records (and a full-text document each), and their documents. */
export async function pair(model: ModelDef = Thing, n = 120): Promise<Pair> {
  const store = await openSqlStore({ url: 'sqlite::memory:', models: [model], synchronize: true });
  const repo = store.repo<ThingT>(model);
  const made = await repo.createMany(things(n));
  await repo.setTexts(new Map(made.map((r, i) => [r.uid, textOf(i)])));
  const p: Pair = {
    store,
    repo,
    docs: [],
    async reload() {
      const rows = await repo.list({ sort: [{ field: 'uid', dir: 'asc' }] });
      const texts = new Map(made.map((r, i) => [r.uid, textOf(i)]));
      // Through BSON and back, as the server keeps and answers them (Dates, Binary, numbers).
      p.docs = rows.map((r) => BSON.deserialize(BSON.serialize({ ...toDocument(model, r), _w: wordsOf(texts.get(r.uid) ?? '') })));
    },
  };
  await p.reload();
  return p;
}

/** A full-text document per record: shared words, prefixes, case, diacritics, addresses. */
export function textOf(i: number): string {
  return `${WORDS[i % WORDS.length]} ${WORDS[(i * 5) % WORDS.length]} Quarterly r${i} n${i % 13} mail${i % 4}@host${i % 3}.example`;
}

/** What mingo answers for the query documents of a list query, as uids in order. */
export function mingoList(model: ModelDef, docs: Doc[], q: ListQuery, extra?: MongoFilter): string[] {
  const filter = filterOf(model, q.filter);
  const criteria = extra ? { $and: [filter, extra] } : filter;
  let cursor = new Query(criteria).find<Doc>(docs).sort(Object.fromEntries(sortOf(model, q.sort)));
  if (q.offset) cursor = cursor.skip(q.offset);
  if (q.limit !== undefined) cursor = cursor.limit(q.limit);
  return cursor.all().map((d) => String(d._id));
}

/** Applies an update document to a copy of the stored document as MongoDB would (mingo's updater). */
export function mingoUpdate(doc: Doc, update: Record<string, unknown>): Doc {
  const copy = structuredClone(doc);
  updateOne([copy], { _id: copy._id }, update as never);
  return copy;
}
