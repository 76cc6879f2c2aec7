// Turns one declared operation into a concrete request: path and query parameters filled from
// fixtures the owner (or, for administration, an elevated administrator) made, and a body sampled
// from the declared request schema with the same fixtures for the fields that name records.
import { schemasOf, type ResourceDecl } from '../../../lib/resources/index.js';
import type { ApiOperation, SchemaObject, Target } from './operations.js';
import type { World } from './world.js';

export interface Request {
  url: string;
  body?: unknown;
  headers?: Record<string, string>;
  /** Some parameter names the owner's mailbox data (so strangers must get 404). */
  ownerData: boolean;
  /** A parameter could not be filled from a fixture (see PLACEHOLDER_PARAMS): allowed callers may get 404. */
  placeholder: boolean;
}

/** Stale on purpose: allowed callers reach the handler (409) without changing the fixtures. */
export const STALE_VERSION = 999_999;

/**
 * Path parameters the matrix cannot fill with a real record, and why. The route is still driven:
 * every denial is checked; only the allowed callers may see 404 for the missing sub-record.
 */
export const PLACEHOLDER_PARAMS: Record<string, string> = {
  wrapId: 'a key-vault wrap needs an enrolled vault (client-side Argon2 and WebCrypto); covered by test/integration/keys',
  uid: 'a discovered-key conflict or a signing-enrolment request needs a second server or a CA round trip; covered by test/integration/keys',
  addr: 'a looked-up address with an enrolled key needs a vault (as wrapId); the lookup answers 404 for an address without one',
};

/** A minimal instance of a JSON schema; fields that name records take the fixtures'. */
export async function sample(s: SchemaObject | undefined, w: World, ctx: { decl: ResourceDecl | null; name?: string }): Promise<unknown> {
  const hinted = ctx.name ? await w.hint(ctx.name, ctx.decl) : undefined;
  if (hinted !== undefined) return hinted;
  if (!s) return {};
  if ('const' in s) return s.const;
  if (s.enum?.length) return s.enum[0];
  if (s.oneOf?.length || s.anyOf?.length) return sample((s.oneOf ?? s.anyOf)![0], w, ctx);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const k of s.required ?? []) out[k] = await sample(s.properties?.[k], w, { decl: ctx.decl, name: k });
      return out;
    }
    case 'array': {
      const n = Math.max(1, s.minItems ?? 0);
      const items = [];
      for (let i = 0; i < n; i++) items.push(await sample(s.items, w, { decl: ctx.decl }));
      return items;
    }
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1);
    case 'boolean':
      return s.default ?? false;
    case 'string': {
      if (s.format === 'date-time') return new Date().toISOString();
      if (s.format === 'email') return 'someone@example.net';
      return 'matrix-input';
    }
    default:
      return s.default ?? null;
  }
}

/** Bodies for routes that take raw content (the declared content type says which). */
function rawBody(contentType: string, w: World): string | null {
  const m = w.markers.content;
  switch (contentType) {
    case 'text/calendar':
      return `BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//matrix//EN\r\nBEGIN:VEVENT\r\nUID:matrix-${Date.now()}@example.net\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nSUMMARY:${m}\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n`;
    case 'text/vcard':
      return `BEGIN:VCARD\r\nVERSION:4.0\r\nFN:${m}\r\nEND:VCARD\r\n`;
    case 'message/rfc822':
    case 'application/octet-stream':
      return `From: x@example.net\r\nTo: alice@example.test\r\nSubject: ${m}\r\n\r\n${m}\r\n`;
    case 'application/pkcs7-mime':
      return 'From: alice@example.test\r\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data\r\n\r\nAAAA\r\n';
    default:
      return contentType.startsWith('application/json') || contentType.endsWith('+json') ? null : m;
  }
}

export async function build(op: ApiOperation, t: Target, w: World): Promise<Request> {
  const refs = { owner: false, placeholder: false };
  const note = (v: { value: string; owner: boolean; placeholder?: boolean }) => {
    refs.owner ||= v.owner;
    refs.placeholder ||= Boolean(v.placeholder);
    return v.value;
  };
  // Path parameters: {id} is a record of the resource the route lives under (or of the segment before it).
  const segments = op.path.split('/');
  let property: string | null = null;
  for (let i = 0; i < segments.length; i++) {
    const m = /^\{(\w+)\}$/.exec(segments[i]);
    if (!m) continue;
    const name = m[1];
    let value: string;
    if (name === 'property') {
      property = t.decl ? ([...schemasOf(t.decl).writable][0] ?? 'name') : 'name';
      value = property;
    } else value = note(await w.param(name, { decl: t.decl, before: segments[i - 1], path: op.path }));
    segments[i] = encodeURIComponent(value);
  }
  const query = new URLSearchParams();
  for (const q of op.query) {
    // A mailbox-scoped collection is asked about the owner's mailbox (strangers: 404); mailboxes filter by uid.
    // A declared ?version= is always sent, stale, so allowed callers reach the handler and change nothing.
    const wanted =
      q.required ||
      q.name === 'version' ||
      (q.name === 'mailboxUid' && t.decl?.scope === 'mailbox') ||
      (q.name === 'uid' && t.decl?.mailboxField === 'uid' && !t.byId);
    if (!wanted || (op.unfiltered && !q.required)) continue;
    const v = await w.queryValue(q.name, q.schema, t.decl);
    query.set(q.name, note(v));
  }
  if (op.adminScope) query.set('scope', 'admin');
  let body: unknown;
  let headers: Record<string, string> | undefined;
  if (op.body) {
    const raw = rawBody(op.body.contentType, w);
    if (raw !== null) {
      body = raw;
      headers = { 'content-type': op.body.contentType };
    } else if (property)
      body = {
        value: await w.currentValue(t.decl!, segments[segments.indexOf(encodeURIComponent(property)) - 1], property),
        version: STALE_VERSION,
      };
    else if (op.method === 'POST' && t.decl && !t.byId && op.path.endsWith(t.decl.name)) body = await w.createBody(t.decl, op.body.schema);
    else body = await sample(op.body.schema, w, { decl: t.decl });
    if (body && typeof body === 'object')
      refs.owner ||= JSON.stringify(body).includes(w.ids.mailbox) || w.ownedUids().some((u) => JSON.stringify(body).includes(u));
  }
  const qs = query.toString();
  return { url: segments.join('/') + (qs ? `?${qs}` : ''), body, headers, ownerData: refs.owner, placeholder: refs.placeholder };
}
