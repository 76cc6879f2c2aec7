import { z } from 'zod';

/** Storage types every adapter knows how to hold. Derived from the zod field schema. */
export type ColumnKind = 'text' | 'integer' | 'number' | 'boolean' | 'date' | 'json' | 'bytes';

/** The field type of binary content (a bytea / BLOB column); neither filtered nor sorted on. */
export const bytesField = z.instanceof(Buffer);

export interface ColumnInfo {
  kind: ColumnKind;
  nullable: boolean;
}

export interface IndexDecl {
  fields: string[];
  unique?: boolean;
}

/**
 * A multi-valued index: values derived from list fields (recipients, labels, words of a name) kept
 * in a side table beside the model's rows, written in the same transaction as the row. Filters name
 * it like a field: `{ [name]: { $has: v } }` (one of the values equals v) or `{ [name]: { $prefix: p } }`.
 */
export interface ValueIndexDecl {
  name: string;
  /** Fields the values come from: a write that changes one of them recomputes the record's values. */
  from: string[];
  /** A text field whose equality in the same filter narrows the lookup (e.g. mailboxUid). */
  scope?: string;
  /** The values of one record (the declaration normalises them, e.g. lower case). */
  values(rec: Record<string, unknown>): string[];
}

/**
 * A field whose value names a blob the record still needs: the blob's file is kept while any record
 * of the model names it and matches `while` (every record when absent). Raw messages waiting in a
 * queue, held in quarantine or waiting to be relayed are needed by records other than the messages
 * that count blob references (Spec: a crash at any point loses no accepted mail).
 */
export interface BlobHolderDecl {
  field: string;
  while?: Record<string, unknown>;
}

/**
 * A model: one table (SQL) or collection (document), declared once. Every record also carries
 * uid (server-minted UUIDv7), version, createdAt and updatedAt; lease models carry claimedBy and
 * leaseUntil for queue-like claims.
 */
export interface ModelDef<S extends z.ZodRawShape = z.ZodRawShape> {
  name: string;
  table: string;
  fields: S;
  indexes?: IndexDecl[];
  lease?: boolean;
  /** Records carry a full-text document (Repo.setText / Repo.search; SQLite FTS5, PostgreSQL tsvector). */
  fullText?: boolean;
  valueIndexes?: ValueIndexDecl[];
  blobHolders?: BlobHolderDecl[];
  columns: Record<string, ColumnInfo>;
}

export interface RecordBase {
  uid: string;
  version: number;
  createdAt: Date;
  updatedAt: Date;
}

export interface LeaseFields {
  claimedBy: string | null;
  leaseUntil: Date | null;
}

export type RecordOf<M> = M extends ModelDef<infer S> ? z.infer<z.ZodObject<S>> & RecordBase : never;

export const BASE_FIELDS = ['uid', 'version', 'createdAt', 'updatedAt'] as const;
export const LEASE_FIELDS = ['claimedBy', 'leaseUntil'] as const;

function unwrap(schema: z.ZodType): { inner: z.ZodType; nullable: boolean } {
  let s = schema;
  let nullable = false;
  for (;;) {
    const t = s.def.type;
    if (t === 'optional' || t === 'nullable' || t === 'default' || t === 'prefault' || t === 'catch' || t === 'readonly') {
      if (t !== 'default' && t !== 'prefault' && t !== 'catch') nullable = true;
      s = (s.def as unknown as { innerType: z.ZodType }).innerType;
    } else if (t === 'pipe') {
      s = (s.def as unknown as { out: z.ZodType }).out;
    } else {
      return { inner: s, nullable };
    }
  }
}

/** Storage kind of a zod field: the one place where API types meet column types. */
export function columnOf(schema: z.ZodType): ColumnInfo {
  const { inner, nullable } = unwrap(schema);
  const t = inner.def.type;
  let kind: ColumnKind;
  if (inner === bytesField) kind = 'bytes';
  else if (t === 'string' || t === 'enum' || t === 'template_literal') kind = 'text';
  else if (t === 'literal') kind = typeof (inner.def as unknown as { values: unknown[] }).values[0] === 'string' ? 'text' : 'json';
  else if (t === 'number') kind = (inner as z.ZodNumber).isInt ? 'integer' : 'number';
  else if (t === 'boolean') kind = 'boolean';
  else if (t === 'date') kind = 'date';
  else kind = 'json';
  return { kind, nullable };
}

type ModelDecl<S extends z.ZodRawShape> = Omit<ModelDef<S>, 'columns'>;

function checkIndexes(decl: ModelDecl<z.ZodRawShape>, columns: Record<string, ColumnInfo>): void {
  for (const idx of decl.indexes ?? []) {
    for (const f of idx.fields) {
      if (
        !(f in columns) &&
        !(BASE_FIELDS as readonly string[]).includes(f) &&
        !(decl.lease && (LEASE_FIELDS as readonly string[]).includes(f))
      ) {
        throw new Error(`model ${decl.name}: index names unknown field ${f}`);
      }
    }
  }
  for (const h of decl.blobHolders ?? []) {
    // Looked up by value whenever a blob may be freed: without an index that is a scan of the table.
    if (!(decl.indexes ?? []).some((i) => i.fields[0] === h.field))
      throw new Error(`model ${decl.name}: blob holder ${h.field} needs an index starting with it`);
  }
}

function checkValueIndexes(decl: ModelDecl<z.ZodRawShape>, columns: Record<string, ColumnInfo>): void {
  for (const vi of decl.valueIndexes ?? []) {
    // A value index is named in filters like a field, so it must not shadow a filterable column.
    if (columns[vi.name] && columns[vi.name].kind !== 'json')
      throw new Error(`model ${decl.name}: value index ${vi.name} shadows a column`);
    for (const f of [...vi.from, ...(vi.scope ? [vi.scope] : [])])
      if (!(f in columns)) throw new Error(`model ${decl.name}: value index ${vi.name} names unknown field ${f}`);
    if (vi.scope && columns[vi.scope].kind !== 'text')
      throw new Error(`model ${decl.name}: value index scope ${vi.scope} must be a text field`);
  }
}

export function defineModel<S extends z.ZodRawShape>(decl: ModelDecl<S>): ModelDef<S> {
  for (const reserved of [...BASE_FIELDS, ...LEASE_FIELDS]) {
    if (reserved in decl.fields) throw new Error(`model ${decl.name}: field ${reserved} is reserved`);
  }
  const columns: Record<string, ColumnInfo> = {};
  for (const [k, s] of Object.entries(decl.fields)) columns[k] = columnOf(s as z.ZodType);
  checkIndexes(decl, columns);
  checkValueIndexes(decl, columns);
  return { ...decl, columns };
}

/** Column kinds of every field a query may name, base fields included. */
export function queryableColumns(model: ModelDef): Record<string, ColumnInfo> {
  const cols: Record<string, ColumnInfo> = {
    uid: { kind: 'text', nullable: false },
    version: { kind: 'integer', nullable: false },
    createdAt: { kind: 'date', nullable: false },
    updatedAt: { kind: 'date', nullable: false },
    ...model.columns,
  };
  if (model.lease) {
    cols.claimedBy = { kind: 'text', nullable: true };
    cols.leaseUntil = { kind: 'date', nullable: true };
  }
  return cols;
}

/** Whether a patch changes a field some value index is derived from (or its scope). */
export function touchesValues(model: ModelDef, patch: object): boolean {
  return Boolean(model.valueIndexes?.some((vi) => vi.from.some((f) => f in patch) || (vi.scope !== undefined && vi.scope in patch)));
}

/** Fills fields the caller left out with the model's defaults (null for optional ones). */
export function withDefaults(model: ModelDef, data: Record<string, unknown>): Record<string, unknown> {
  const out = { ...data };
  for (const [k, s] of Object.entries(model.fields)) {
    if (out[k] !== undefined) continue;
    const r = (s as z.ZodType).safeParse(undefined);
    out[k] = r.success ? (r.data ?? null) : null;
  }
  return out;
}

/**
 * A Date as read from the store. It is a real Date (services compare and compute with it), but it
 * carries its ISO text so that JSON serialisation — most of the cost of a list answer when every
 * record has two timestamps — does not format it again.
 */
export class StoredDate extends Date {
  #iso: string | undefined;
  constructor(ms: number, iso?: string) {
    super(ms);
    this.#iso = iso;
  }

  override toJSON(): string {
    return (this.#iso ??= this.toISOString());
  }
}

/** The digit at position i of v (read by character code). */
function digit(v: string, i: number): number {
  return v.charCodeAt(i) - 48;
}

/** Milliseconds of UTC text laid out as 'YYYY-MM-DD?HH:MM:SS[.SSS]' (any separator at position 10). */
function utcTextMs(v: string): number {
  // This runs for every date of every row read (two per record): no closure made per call (from
  // sources tsx names every closure it makes, a property definition each time).
  let ms = 0;
  if (v[19] === '.')
    for (let i = 20, scale = 100; i < 23; i++, scale /= 10)
      ms += i < v.length && v.charCodeAt(i) >= 48 && v.charCodeAt(i) <= 57 ? digit(v, i) * scale : 0;
  return Date.UTC(
    digit(v, 0) * 1000 + digit(v, 1) * 100 + digit(v, 2) * 10 + digit(v, 3),
    digit(v, 5) * 10 + digit(v, 6) - 1,
    digit(v, 8) * 10 + digit(v, 9),
    digit(v, 11) * 10 + digit(v, 12),
    digit(v, 14) * 10 + digit(v, 15),
    digit(v, 17) * 10 + digit(v, 18),
    ms,
  );
}

/** ISO text as PostgreSQL formats it for the read path ('YYYY-MM-DDTHH:MM:SS.SSSZ', UTC) to a StoredDate. */
export function isoDate(v: string): StoredDate {
  if (v.length !== 24 || v[10] !== 'T' || v[23] !== 'Z') return new StoredDate(Date.parse(v));
  return new StoredDate(utcTextMs(v), v);
}

/** TypeORM's SQLite datetime text ('YYYY-MM-DD HH:MM:SS.SSS', UTC) to a StoredDate. */
export function sqliteDate(v: string): StoredDate {
  return new StoredDate(utcTextMs(v), v.length >= 23 ? `${v.slice(0, 10)}T${v.slice(11, 23)}Z` : undefined);
}
