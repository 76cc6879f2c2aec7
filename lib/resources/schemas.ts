import { z } from 'zod';
import type { ResourceDecl } from './define.js';

const version = z.number().int().positive();

function stripDefault(s: z.ZodType): z.ZodType {
  // zod 4 applies defaults inside optional fields; an update must never reset a field the client left out.
  let cur = s;
  while (cur.def.type === 'default' || cur.def.type === 'prefault') cur = (cur.def as unknown as { innerType: z.ZodType }).innerType;
  return cur;
}

/** A field as it goes on the wire: a date is ISO 8601 text (wrappers kept: optional, nullable, default). */
export function onWire(s: z.ZodType): z.ZodType {
  const def = s.def as { type: string; innerType?: z.ZodType };
  if (def.type === 'date') return z.iso.datetime();
  if (def.type === 'optional') return onWire(def.innerType as z.ZodType).optional();
  if (def.type === 'nullable') return onWire(def.innerType as z.ZodType).nullable();
  if (def.type === 'default' || def.type === 'prefault') return onWire(def.innerType as z.ZodType);
  return s;
}

function pick(shape: z.ZodRawShape, drop: Set<string>): z.ZodRawShape {
  return Object.fromEntries(Object.entries(shape).filter(([k]) => !drop.has(k)));
}

/** The request schemas of a resource, all derived from its model and declaration. */
export interface ResourceSchemas {
  create: z.ZodObject;
  update: z.ZodObject;
  /** ?scope=admin updates: the admin fields only. */
  adminUpdate: z.ZodObject;
  record: z.ZodObject;
  writable: Set<string>;
}

const cache = new WeakMap<ResourceDecl, ResourceSchemas>();

export function schemasOf(decl: ResourceDecl): ResourceSchemas {
  const hit = cache.get(decl);
  if (hit) return hit;
  const fields = decl.model.fields;
  const server = new Set(decl.serverFields ?? []);
  const immutable = new Set([
    ...(decl.immutableFields ?? []),
    ...(decl.parent ? [decl.parent.field] : []),
    ...(decl.mailboxField && decl.mailboxField !== 'uid' ? [decl.mailboxField] : []),
  ]);
  const create = z.object({ ...pick(fields, server), ...(decl.createInput ?? {}) }).strict();
  const adminOnly = new Set(decl.adminFields ?? []);
  const optionalShape = (keep: (k: string) => boolean): z.ZodRawShape =>
    Object.fromEntries(
      Object.entries(fields)
        .filter(([k]) => keep(k))
        .map(([k, s]) => [k, stripDefault(s as z.ZodType).optional()]),
    );
  const updShape = optionalShape((k) => !server.has(k) && !immutable.has(k) && !adminOnly.has(k));
  const update = z.object({ ...updShape, version }).strict();
  const adminUpdate = z.object({ ...optionalShape((k) => adminOnly.has(k)), version }).strict();
  const hidden = new Set(decl.hiddenFields ?? []);
  const record = z.object({
    uid: z.string(),
    version,
    createdAt: z.iso.datetime(),
    updatedAt: z.iso.datetime(),
    ...Object.fromEntries(Object.entries(pick(fields, hidden)).map(([k, f]) => [k, onWire(f as z.ZodType)])),
  });
  const out = { create, update, adminUpdate, record, writable: new Set(Object.keys(updShape)) };
  cache.set(decl, out);
  return out;
}
