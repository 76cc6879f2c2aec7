// Every operation of the api app's OpenAPI registry (read from its own document, so a new route is
// driven as soon as it is declared), turned into a request whose parameters name the world's
// fixtures and whose body is a minimal instance of the declared schema — enough to get past
// validation to the code that touches the store.
import { randomUUID } from 'node:crypto';
import { INGEST_SECRET, type World } from './world.js';

interface Schema {
  type?: string | string[];
  properties?: Record<string, Schema>;
  required?: string[];
  items?: Schema;
  enum?: unknown[];
  const?: unknown;
  oneOf?: Schema[];
  anyOf?: Schema[];
  minItems?: number;
  minimum?: number;
  format?: string;
  default?: unknown;
}

export interface Operation {
  method: string;
  /** OpenAPI form: /api/mail/messages/{id}/raw */
  path: string;
  auth: string;
  query: Array<{ name: string; required: boolean; schema: Schema }>;
  body: { contentType: string; schema: Schema } | null;
}

export const keyOf = (op: Pick<Operation, 'method' | 'path'>) => `${op.method} ${op.path}`;

export async function operationsOf(w: World): Promise<Operation[]> {
  const r = await w.api.call('GET', '/api/openapi/json', { token: w.tokens.alice });
  if (r.status !== 200) throw new Error(`openapi: ${r.status}`);
  const out: Operation[] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  for (const [path, ops] of Object.entries<Record<string, any>>(r.body.paths)) {
    for (const [method, o] of Object.entries(ops)) {
      const params = (o.parameters ?? []) as Array<{ name: string; in: string; required?: boolean; schema: Schema }>;
      const content = o.requestBody?.content as Record<string, { schema: Schema }> | undefined;
      const first = content ? Object.entries(content)[0] : undefined;
      out.push({
        method: method.toUpperCase(),
        path,
        auth: o['x-svcmail-auth'],
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: Boolean(p.required), schema: p.schema })),
        body: first ? { contentType: first[0], schema: first[1].schema } : null,
      });
    }
  }
  return out;
}

/** The fixture a path's {id} names: the record of the collection before it, else a fresh uid. */
function idFor(w: World, collection: string): string {
  switch (collection) {
    case 'mailboxes':
      return w.ids.mailbox;
    case 'folders':
      return w.ids.inbox;
    case 'messages':
      return w.ids.message;
    case 'compose':
      return w.ids.draft;
    case 'acls':
      return w.ids.acl;
    default:
      return randomUUID();
  }
}

function paramFor(w: World, name: string, before: string): string {
  switch (name) {
    case 'id':
      return idFor(w, before);
    case 'mailboxUid':
      return w.ids.mailbox;
    case 'attachmentId':
      return '1';
    case 'property':
      return 'name';
    case 'resource':
      return 'messages';
    case 'name':
      return 'autodiscover';
    case 'email':
      return 'alice@example.test';
    case 'hash':
      return 'a'.repeat(64);
    case 'token':
      return 'share-token-0000';
    default:
      return randomUUID();
  }
}

function sample(w: World, s: Schema | undefined, name?: string): unknown {
  if (!s) return {};
  if (name === 'mailboxUid' || name === 'resourceUid') return w.ids.mailbox;
  if (name === 'folderUid') return w.ids.inbox;
  if (name === 'messageUid') return w.ids.message;
  if (name === 'subject') return 'user:carol';
  if (name === 'uid') return randomUUID();
  if (name === 'owners') return ['alice']; // alice keeps her mailbox when a late owners change lands
  if ('const' in s) return s.const;
  if (s.enum?.length) return s.enum[0];
  if (s.oneOf?.length || s.anyOf?.length) return sample(w, (s.oneOf ?? s.anyOf)![0], name);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== 'null') : s.type;
  switch (type) {
    case 'object': {
      // Required fields, plus uid and version where declared (bulk items name their record by them).
      const keys = new Set([...(s.required ?? []), ...['uid', 'version'].filter((k) => s.properties?.[k])]);
      return Object.fromEntries([...keys].map((k) => [k, sample(w, s.properties?.[k], k)]));
    }
    case 'array':
      return Array.from({ length: Math.max(1, s.minItems ?? 0) }, () => sample(w, s.items));
    case 'integer':
    case 'number':
      return Math.max(1, s.minimum ?? 1);
    case 'boolean':
      return s.default ?? false;
    case 'string':
      return s.format === 'date-time' ? new Date().toISOString() : s.format === 'email' ? 'someone@example.net' : 'reliability';
    default:
      return s.default ?? null;
  }
}

function rawBody(contentType: string): string {
  switch (contentType) {
    case 'text/calendar':
      return 'BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//r//EN\r\nBEGIN:VEVENT\r\nUID:r-1@example.net\r\nDTSTAMP:20260101T000000Z\r\nDTSTART:20261201T100000Z\r\nDTEND:20261201T110000Z\r\nSUMMARY:r\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n';
    case 'text/vcard':
      return 'BEGIN:VCARD\r\nVERSION:4.0\r\nFN:r\r\nEND:VCARD\r\n';
    case 'application/pkcs7-mime':
      return 'From: alice@example.test\r\nContent-Type: application/pkcs7-mime; smime-type=enveloped-data\r\n\r\nAAAA\r\n';
    case 'text/xml':
      return '<?xml version="1.0"?><Autodiscover xmlns="http://schemas.microsoft.com/exchange/autodiscover/outlook/requestschema/2006"><Request><EMailAddress>alice@example.test</EMailAddress></Request></Autodiscover>';
    default:
      return 'From: x@example.net\r\nTo: alice@example.test\r\nSubject: r\r\nMessage-ID: <r-1@example.net>\r\n\r\nbody\r\n';
  }
}

const QUERY_VALUES: Record<string, (w: World) => string> = {
  rcpt: () => 'alice@example.test',
  name: () => 'example.test',
  resource: () => 'mailboxes',
  uid: (w) => w.ids.mailbox,
  from: () => '2026-01-01T00:00:00Z',
  to: () => '2026-12-31T00:00:00Z',
};

export interface BuiltRequest {
  url: string;
  init: RequestInit;
}

/** The request for one operation, as the caller its declaration names. */
export function requestFor(w: World, op: Operation, extraHeaders: Record<string, string> = {}): BuiltRequest {
  const segments = op.path.split('/');
  for (let i = 0; i < segments.length; i++) {
    const m = /^\{(\w+)\}$/.exec(segments[i]);
    if (m) segments[i] = encodeURIComponent(paramFor(w, m[1], segments[i - 1]));
  }
  const query = new URLSearchParams();
  for (const q of op.query) {
    if (q.name === 'mailboxUid') query.set(q.name, w.ids.mailbox);
    else if (q.name === 'folderUid') query.set(q.name, w.ids.inbox);
    else if (q.required) query.set(q.name, QUERY_VALUES[q.name]?.(w) ?? String(sample(w, q.schema, q.name)));
  }
  const headers: Record<string, string> = { ...extraHeaders };
  if (op.auth === 'ingest-secret') {
    headers.authorization = `Bearer ${INGEST_SECRET}`;
    headers['x-envelope-to'] = 'alice%40example.test';
    headers['x-envelope-from'] = 'x%40example.net';
  } else if (op.auth === 'trusted' || op.auth === 'trusted-fresh') headers.authorization = `Bearer ${w.tokens.admin}`;
  else if (op.auth !== 'none') headers.authorization = `Bearer ${w.tokens.alice}`;
  let body: string | undefined;
  if (op.body) {
    const json = op.body.contentType.includes('json');
    headers['content-type'] = op.body.contentType;
    body = json
      ? JSON.stringify(op.path.endsWith('/{property}') ? { value: 'reliability', version: 1 } : sample(w, op.body.schema))
      : rawBody(op.body.contentType);
  } else if (['POST', 'PUT', 'DELETE'].includes(op.method)) {
    headers['content-type'] = 'application/json';
    body = op.method === 'DELETE' ? '{"version":1}' : '{}';
  }
  const qs = query.toString();
  return { url: `${w.api.url}${segments.join('/')}${qs ? `?${qs}` : ''}`, init: { method: op.method, headers, body } };
}

/** Sends it; the answer's text and headers (a request that gets no answer at all fails the test). */
export async function send(req: BuiltRequest, timeoutMs: number): Promise<{ status: number; text: string; headers: Headers; ms: number }> {
  const t0 = Date.now();
  const res = await fetch(req.url, { ...req.init, signal: AbortSignal.timeout(timeoutMs) });
  const text = await res.text();
  return { status: res.status, text, headers: res.headers, ms: Date.now() - t0 };
}
