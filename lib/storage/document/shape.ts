// How a record is kept as a MongoDB document, and back. Pure functions (no driver).
//
// - uid is `_id`; version, createdAt, updatedAt (and claimedBy, leaseUntil) are plain fields.
// - text, integer, number, boolean, date and bytes fields are BSON values of their own type.
// - json fields are kept as their JSON text: never queried (the port refuses filters on them), and
//   any key survives the round trip (keys with dots or a leading `$` are not valid BSON field names
//   everywhere a document travels).
// - `_v.<index>`: the values of each value index (ModelDef.valueIndexes), an array with a multikey
//   index, written with the record in the same write.
// - `_w`: the words of a full-text record's document (Repo.setText), folded (lower case, no
//   diacritics, as SQLite's FTS5 `remove_diacritics 2` does), an array with a multikey index.
import { StoredDate, type ColumnKind, type ModelDef } from '../model.js';
import { cleanValue, documentText } from '../terms.js';

export const VALUES_FIELD = '_v';
export const WORDS_FIELD = '_w';

/** Distinct words kept per document: a record's document stays far below MongoDB's 16 MB, its index entries bounded. */
export const MAX_WORDS = 20_000;
/** Characters kept of one word (longer words are cut; a query word longer than this still finds them by prefix). */
export const MAX_WORD = 200;

export type Doc = Record<string, unknown>;

/** A word as stored and as looked up: lower case, diacritics removed. */
export function foldWord(w: string): string {
  return w
    .normalize('NFD')
    .replace(/\p{M}+/gu, '')
    .normalize('NFC')
    .toLowerCase();
}

/** The words of a document's text as `_w` keeps them. */
export function wordsOf(text: string): string[] {
  const out = new Set<string>();
  for (const raw of documentText(text).split(' ')) {
    if (!raw) continue;
    const w = foldWord(raw).slice(0, MAX_WORD);
    if (w) out.add(w);
    if (out.size >= MAX_WORDS) break;
  }
  return [...out];
}

/** The `_v` object of a record: each value index's distinct values. */
export function valuesOf(model: ModelDef, rec: Record<string, unknown>): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  for (const vi of model.valueIndexes ?? []) out[vi.name] = [...new Set(vi.values(rec).map(cleanValue))];
  return out;
}

/** Each field's kind, made once per model (every record read and written asks). */
const kindsOf = new WeakMap<ModelDef, Record<string, ColumnKind>>();
function kinds(model: ModelDef): Record<string, ColumnKind> {
  let k = kindsOf.get(model);
  if (!k) kindsOf.set(model, (k = Object.fromEntries(Object.entries(model.columns).map(([f, c]) => [f, c.kind]))));
  return k;
}

/** One field's value as stored. */
export function storedValue(kind: ColumnKind | undefined, v: unknown): unknown {
  if (v === null || v === undefined) return null;
  if (kind === 'json') return JSON.stringify(v);
  if (kind === 'date') return v instanceof Date ? v : new Date(v as string | number);
  if (kind === 'bytes') return Buffer.isBuffer(v) ? v : Buffer.from(v as Uint8Array);
  return v;
}

/** A new record (every field given, base fields included) as the document inserted. */
export function toDocument(model: ModelDef, rec: object): Doc {
  const k = kinds(model);
  const r = rec as Record<string, unknown>;
  const doc: Doc = { _id: r.uid };
  for (const [field, v] of Object.entries(r)) if (field !== 'uid') doc[field] = storedValue(k[field], v);
  if (model.valueIndexes?.length) doc[VALUES_FIELD] = valuesOf(model, r);
  return doc;
}

/** The `$set` of a patch: given fields as stored (undefined ones left alone; the server's own fields never). */
export function setOf(model: ModelDef, patch: Record<string, unknown>): Doc {
  const k = kinds(model);
  const out: Doc = {};
  for (const [field, v] of Object.entries(patch)) {
    if (v === undefined || field === 'uid' || field === 'version' || field === 'createdAt' || field === 'updatedAt') continue;
    if (!(field in k) && !(model.lease && (field === 'claimedBy' || field === 'leaseUntil')))
      throw new Error(`update ${field}: no such field`);
    out[field] = storedValue(k[field], v);
  }
  return out;
}

/** Bytes as the driver answers them (a BSON Binary) to a Buffer. */
function bytesOf(v: unknown): Buffer {
  if (Buffer.isBuffer(v)) return v;
  const bin = v as { buffer?: Uint8Array; value?: () => Uint8Array };
  if (bin.buffer instanceof Uint8Array) return Buffer.from(bin.buffer.buffer, bin.buffer.byteOffset, bin.buffer.byteLength);
  return Buffer.from(bin.value!());
}

/** A document as the record the port answers (no `_v`, `_w` or other fields the model does not know). */
export function fromDocument(model: ModelDef, doc: Doc): Record<string, unknown> {
  const k = kinds(model);
  const out: Record<string, unknown> = {
    uid: doc._id,
    version: doc.version,
    createdAt: new StoredDate((doc.createdAt as Date).getTime()),
    updatedAt: new StoredDate((doc.updatedAt as Date).getTime()),
  };
  for (const [field, kind] of Object.entries(k)) {
    const v = doc[field];
    if (v === null || v === undefined) out[field] = null;
    else if (kind === 'json') out[field] = JSON.parse(v as string) as unknown;
    else if (kind === 'date') out[field] = new StoredDate((v as Date).getTime());
    else if (kind === 'bytes') out[field] = bytesOf(v);
    else out[field] = v;
  }
  if (model.lease) {
    out.claimedBy = doc.claimedBy ?? null;
    out.leaseUntil = doc.leaseUntil ? new StoredDate((doc.leaseUntil as Date).getTime()) : null;
  }
  return out;
}
