import { isDeepStrictEqual } from 'node:util';
import { invalid } from '../errors/index.js';
import type { ResourceDecl } from './define.js';
import { schemasOf } from './schemas.js';

const MANAGED = ['uid', 'createdAt', 'updatedAt'];

/** A value as the API shows it (dates as ISO text, no undefined). */
const shown = (v: unknown): unknown => (v === undefined ? undefined : JSON.parse(JSON.stringify(v)));

/**
 * Clients that read a record, change a field and PUT it back send the fields they may not write
 * too (uid, createdAt, counts, immutable and administrative fields, fields only the view adds).
 * Those are dropped when they equal the record as the API shows it (`shownRecord`, the resource's
 * view of the stored one); one that differs is refused by name, so a client learns which field it
 * cannot change instead of meeting "unrecognized key".
 */
export function dropUnchangedReadOnly(decl: ResourceDecl, shownRecord: Record<string, unknown>, body: unknown): unknown {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return body;
  const writable = schemasOf(decl).writable;
  const known = new Set([...MANAGED, ...Object.keys(decl.model.fields), ...Object.keys(shownRecord)]);
  const hidden = new Set(decl.hiddenFields ?? []);
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(body)) {
    if (key === '__proto__') continue;
    if (key === 'version' || writable.has(key) || !known.has(key) || hidden.has(key)) {
      out[key] = value;
      continue;
    }
    if (isDeepStrictEqual(shown(value), shown(shownRecord[key]))) continue;
    const why = decl.adminFields?.includes(key)
      ? 'an administrative field: change it with ?scope=admin'
      : MANAGED.includes(key) || decl.serverFields?.includes(key)
        ? 'managed by the server'
        : 'fixed when the record is created';
    throw invalid(`${key} cannot be changed here (${why}); send it unchanged or leave it out`, [{ path: key, message: 'read-only' }]);
  }
  return out;
}

/**
 * Refuses (400 api-106) a body naming a field the resource does not have, before anything is read:
 * an unknown field is refused the same way whether or not the record exists, as on every route.
 * Known are the model's fields, uid/createdAt/updatedAt, version and what the view adds.
 */
export function refuseUnknownFields(decl: ResourceDecl, body: unknown): void {
  if (!body || typeof body !== 'object' || Array.isArray(body)) return;
  const known = new Set([...MANAGED, 'version', ...Object.keys(decl.model.fields), ...Object.keys(decl.view?.({}) ?? {})]);
  const unknown = Object.keys(body).filter((k) => !known.has(k));
  if (unknown.length)
    throw invalid(
      `invalid ${decl.entity} update: ${unknown.map((k) => `unrecognized key "${k}"`).join('; ')}`,
      unknown.map((k) => ({ path: '(body)', message: `Unrecognized key: "${k}"` })),
    );
}
