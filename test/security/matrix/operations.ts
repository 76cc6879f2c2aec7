// The authorization matrix reads the routes from the api app's OpenAPI registry (every route is
// declared there with its x-svcmail-auth requirement) and the resource declarations (which routes
// touch mailbox-scoped data). Nothing here lists routes by hand: a new route is driven as soon as it
// is registered, and its expected verdicts follow from its declaration.
import type { AuthRequirement } from '../../../lib/http/index.js';
import { pathOf, type ResourceDecl } from '../../../lib/resources/index.js';

export interface SchemaObject {
  type?: string | string[];
  properties?: Record<string, SchemaObject>;
  required?: string[];
  items?: SchemaObject;
  enum?: unknown[];
  const?: unknown;
  oneOf?: SchemaObject[];
  anyOf?: SchemaObject[];
  minItems?: number;
  minimum?: number;
  minLength?: number;
  format?: string;
  default?: unknown;
}

export interface ApiOperation {
  method: string;
  /** OpenAPI form: /api/mail/messages/{id}/raw */
  path: string;
  operationId: string;
  auth: AuthRequirement;
  daemon: string | null;
  query: Array<{ name: string; required: boolean; schema: SchemaObject }>;
  body: { contentType: string; schema: SchemaObject } | null;
  /** A variant the matrix adds: the same route with ?scope=admin (declared on the route). */
  adminScope?: boolean;
  /** A variant the matrix adds: a list without its optional mailbox filter (each caller's own records). */
  unfiltered?: boolean;
}

/** What a route touches, derived from the resource declarations. */
export interface Target {
  /** The declared resource whose path the route lives under (the longest matching prefix). */
  decl: ResourceDecl | null;
  /** The route names one record of decl in {id}. */
  byId: boolean;
  /** Only reads (GET/HEAD). */
  readOnly: boolean;
  /** One of the generic resource routes (collection, record, property), whose rights the declaration fixes. */
  generic: boolean;
}

// eslint-disable-next-line @typescript-eslint/no-explicit-any -- the OpenAPI document is walked as data
export function operationsOf(doc: any): ApiOperation[] {
  const out: ApiOperation[] = [];
  // eslint-disable-next-line @typescript-eslint/no-explicit-any
  for (const [path, ops] of Object.entries<Record<string, any>>(doc.paths)) {
    for (const [method, o] of Object.entries(ops)) {
      const params = (o.parameters ?? []) as Array<{ name: string; in: string; required?: boolean; schema: SchemaObject }>;
      const content = o.requestBody?.content as Record<string, { schema: SchemaObject }> | undefined;
      const [contentType, media] = content ? Object.entries(content)[0] : [null, null];
      const op: ApiOperation = {
        method: method.toUpperCase(),
        path,
        operationId: o.operationId,
        auth: o['x-svcmail-auth'],
        daemon: o['x-svcmail-daemon'] ?? null,
        query: params.filter((p) => p.in === 'query').map((p) => ({ name: p.name, required: Boolean(p.required), schema: p.schema })),
        body: contentType && media ? { contentType, schema: media.schema } : null,
      };
      out.push(op);
      // ?scope=admin is declared as a query parameter: the administrative view is its own row of the matrix.
      if (op.query.some((q) => q.name === 'scope' && q.schema.enum?.includes('admin')))
        out.push({ ...op, adminScope: true, auth: 'trusted-fresh' });
      if (
        (op.method === 'GET' || op.method === 'HEAD') &&
        op.query.some((q) => !q.required && (q.name === 'mailboxUid' || q.name === 'uid'))
      )
        out.push({ ...op, unfiltered: true });
    }
  }
  return out;
}

export function targetOf(op: ApiOperation, decls: readonly ResourceDecl[]): Target {
  let decl: ResourceDecl | null = null;
  for (const d of decls) {
    const base = pathOf(d);
    if ((op.path === base || op.path.startsWith(`${base}/`)) && (!decl || base.length > pathOf(decl).length)) decl = d;
  }
  const rest = decl ? op.path.slice(pathOf(decl).length) : '';
  return {
    decl,
    byId: /^\/\{id\}(\/|$)/.test(rest),
    readOnly: op.method === 'GET' || op.method === 'HEAD',
    generic: Boolean(decl) && ['', '/{id}', '/{id}/{property}'].includes(rest),
  };
}

/**
 * over-long: the owner's token living 30 days (past auth:options:max_token_age_seconds);
 * elevated-future: an administrator whose `elevated` claim lies an hour ahead. Both are refused
 * tokens (api-101) whoever they name.
 */
export type CallerKind =
  | 'no-token'
  | 'bad-signature'
  | 'wrong-audience'
  | 'wrong-issuer'
  | 'expired'
  | 'over-long'
  | 'elevated-future'
  | 'owner'
  | 'other'
  | 'reader'
  | 'admin-not-elevated'
  | 'admin-elevated'
  | 'admin-stale';
export const TOKEN_PROBLEMS: readonly CallerKind[] = ['bad-signature', 'wrong-audience', 'wrong-issuer', 'over-long', 'elevated-future'];
export const CALLER_KINDS: readonly CallerKind[] = [
  'no-token',
  ...TOKEN_PROBLEMS,
  'expired',
  'owner',
  'other',
  'reader',
  'admin-not-elevated',
  'admin-elevated',
  'admin-stale',
];

/**
 * The verdict classes. unauthenticated: 401 api-100; token: 403 api-101; role: 403 api-103;
 * elevation: 403 api-104; acl: 403 api-102 (visible, not allowed); absent: 404 api-107;
 * secret: the internal hand-off's own guard (401/403, never a JWT); allowed: the handler ran.
 */
export type Verdict = 'allowed' | 'unauthenticated' | 'token' | 'role' | 'elevation' | 'acl' | 'absent' | 'secret';

/**
 * The verdicts the declarations allow for one caller (usually one; a public route may ignore a bad
 * token). ownerData: the request names the owner's mailbox data (a parameter filled from her
 * fixtures), which a route for signed-in users checks with trusted roles stripped (Spec: Roles
 * and elevation); routes that need a trusted role are administration and count it by design.
 */
export function expectedVerdicts(op: ApiOperation, t: Target, ownerData: boolean, c: CallerKind): Verdict[] {
  if (op.auth === 'ingest-secret') return ['secret']; // no JWT caller holds the transport's secret
  const tokenProblem: Verdict | null =
    c === 'no-token' ? null : c === 'expired' ? 'unauthenticated' : TOKEN_PROBLEMS.includes(c) ? 'token' : null;
  // A presented token that fails verification is refused everywhere, public routes included (fail closed);
  // a route mounted before the token check (readiness) never looks at it.
  // A public route's own 404 (an unknown key hash, a revoked link) is its answer, not a denial.
  if (op.auth === 'none') return tokenProblem ? [tokenProblem, 'allowed', 'absent'] : ['allowed', 'absent'];
  if (c === 'no-token') return ['unauthenticated'];
  if (tokenProblem) return [tokenProblem];
  const admin = c.startsWith('admin-');
  if (op.auth === 'trusted' || op.auth === 'trusted-fresh') {
    if (!admin) return ['role'];
    // Without elevation an admin holds no trusted role (Spec: Roles and elevation): the generic routes say
    // api-103, requireTrusted says api-104 (the console's cue to elevate). Both refuse; sensitive routes say api-104.
    if (c === 'admin-not-elevated') return op.auth === 'trusted' ? ['role', 'elevation'] : ['elevation'];
    if (c === 'admin-stale' && op.auth === 'trusted-fresh') return ['elevation'];
    return ['allowed'];
  }
  if (!ownerData || op.adminScope) return ['allowed'];
  // Mailbox data: trusted roles are stripped, so administrators are strangers (404, like any stranger).
  if (c === 'owner') return ['allowed'];
  // A read share opens the generic reads; which feature reads it opens (an export archive, the ACL
  // entries, the impersonation list need owner or share rights) is the route's own rule: refusing is safe.
  if (c === 'reader') return !t.readOnly ? ['acl'] : t.generic ? ['allowed'] : ['allowed', 'acl'];
  return ['absent'];
}

const DENIAL_CODES: Record<string, Verdict> = {
  'api-100': 'unauthenticated',
  'api-101': 'token',
  'api-103': 'role',
  'api-104': 'elevation',
  'api-102': 'acl',
  'api-107': 'absent',
};

/** The verdict an answer shows. A bulk route answers 200 with a status per item: the item counts. */
export function verdictOf(op: ApiOperation, status: number, body: unknown): Verdict | 'error' | 'forbidden' {
  if (op.auth === 'ingest-secret' && (status === 401 || status === 403 || status === 429)) return 'secret'; // 429: the guard counts wrong secrets
  const item = (body as { results?: Array<{ status: number; code?: string }> } | null)?.results?.[0];
  if (status === 200 && item && typeof item.status === 'number')
    return item.status >= 400 && item.code && DENIAL_CODES[item.code] ? DENIAL_CODES[item.code] : 'allowed';
  if (status >= 500 && status !== 502 && status !== 503) return 'error'; // 502/503: the handler ran and a peer did not answer
  const code = (body as { code?: string } | null)?.code;
  if (status === 401) return 'unauthenticated';
  if (status === 404) return 'absent';
  if (status === 403) return (code && DENIAL_CODES[code]) || (op.method === 'HEAD' ? 'forbidden' : 'error'); // HEAD answers carry no code
  return 'allowed';
}
