// The one way to declare a route that is not a generic resource route: one declaration gives the
// validation of path, query and body (zod), the access check, the OpenAPI operation (generated from
// the same zod schemas) and the handler call. Handlers get parsed input and return the answer; they
// call service functions, which never see Express.
import { pipeline } from 'node:stream/promises';
import type { Request, RequestHandler, Response, Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../context/index.js';
import { parseOrThrow } from '../errors/index.js';
import { contextFor, type CtxFor } from './context.js';
import { jsonSchema, type AuthRequirement, type OpenApiRegistry, type OperationDoc } from './openapi.js';

export type RouteMethod = 'get' | 'head' | 'post' | 'put' | 'patch' | 'delete';

type AnyObject = z.ZodObject<z.ZodRawShape>;
type Infer<S> = S extends z.ZodType ? z.output<S> : undefined;

/** What a handler is handed besides the context: the parsed path parameters, query and body. */
export interface RouteInput<P, Q, B> {
  params: Infer<P> extends undefined ? Record<string, string> : Infer<P>;
  query: Infer<Q> extends undefined ? Record<string, never> : Infer<Q>;
  body: Infer<B>;
}

export interface RouteSpec<A extends AuthRequirement, P, Q, B, R> {
  method: RouteMethod;
  /** Express path; `:name` parameters become OpenAPI `{name}`. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: A;
  /** Path parameters; by default every `:name` is a non-empty string. */
  params?: P & AnyObject;
  /** Query parameters (strings as Express reads them: coerce numbers and booleans in the schema); others are refused. */
  query?: Q & AnyObject;
  /** A JSON body; objects are strict, so an unknown field is refused like a wrong one (400 api-106). */
  body?: B & z.ZodType;
  /** The body may be left out (the handler then gets undefined); one that is sent is checked. */
  bodyOptional?: boolean;
  /** Request headers the route reads (checked by the route or a `before` guard): documented only. */
  headers?: Array<{ name: string; description: string; required?: boolean }>;
  /** A body that is not JSON (message/rfc822, text/calendar, multipart): documented here, read by the handler. */
  rawBody?: { contentType: string; description?: string; required?: boolean };
  /** The success status (default 200; 204 answers no body). */
  status?: number;
  /** The JSON answer: the handler returns it and it is sent with `status`. */
  response?: R & z.ZodType;
  /** An answer that is not JSON (a download, a stream, a redirect): documented here, written by the handler to `res`. */
  rawResponse?: {
    contentType?: string;
    description: string;
    /** What a JSON answer the handler writes itself carries (one answered 200 or 204, say). */
    schema?: z.ZodType;
    headers?: Record<string, { description: string; schema: object }>;
  };
  /** Documented error answers beyond the default error body: status → when. */
  errors?: Record<number, string>;
  /** Run before validation: a body parser of another type, a guard of its own (the ingest secret). */
  before?: RequestHandler[];
  daemon?: OperationDoc['daemon'];
  plugin?: string;
  handler: (
    ctx: CtxFor<A>,
    input: RouteInput<P, Q, B>,
    req: Request,
    res: Response,
  ) => Promise<(R extends z.ZodType ? z.input<R> : unknown) | void>;
}

/**
 * A date in an answer: the handler may return a Date, the wire carries ISO 8601 text, and the
 * OpenAPI document says `format: date-time`.
 */
export const isoDate: z.ZodType<string, string | Date> = z.iso.datetime();

/** No body: nothing sent, or an empty JSON object from a client that always sends one. */
const isEmptyBody = (b: unknown) => b === undefined || (typeof b === 'object' && b !== null && !Array.isArray(b) && !Object.keys(b).length);

/**
 * Set (by the test suite) to check every JSON answer against its declared response schema, as it
 * goes on the wire: an answer that drifts from its OpenAPI description fails the request with a 500.
 */
const CHECK_RESPONSES = process.env.SVCMAIL_CHECK_RESPONSES === '1';

function paramsSchema(path: string): AnyObject {
  return z.object(Object.fromEntries([...path.matchAll(/:(\w+)/g)].map((m) => [m[1], z.string().min(1)])));
}

function operationDoc(spec: RouteSpec<AuthRequirement, unknown, unknown, unknown, unknown>): OperationDoc {
  const status = spec.status ?? 200;
  const query = spec.query ? (jsonSchema(spec.query, 'input') as { properties?: Record<string, object>; required?: string[] }) : null;
  const parameters = [
    ...Object.entries(query?.properties ?? {}).map(([name, schema]) => {
      const { description, ...rest } = schema as { description?: string };
      return { name, in: 'query' as const, required: query?.required?.includes(name) ?? false, description, schema: rest };
    }),
    ...(spec.headers ?? []).map((h) => ({ ...h, in: 'header' as const, schema: { type: 'string' } })),
  ];
  const body = spec.body
    ? { schema: jsonSchema(spec.body, 'input'), required: !spec.bodyOptional }
    : spec.rawBody
      ? {
          schema: { type: 'string', description: spec.rawBody.description },
          contentType: spec.rawBody.contentType,
          required: spec.rawBody.required,
        }
      : undefined;
  const ok = spec.response
    ? { description: 'ok', schema: jsonSchema(spec.response, 'output') }
    : spec.rawResponse
      ? {
          description: spec.rawResponse.description,
          ...(spec.rawResponse.schema
            ? { contentType: spec.rawResponse.contentType, schema: jsonSchema(spec.rawResponse.schema, 'output') }
            : spec.rawResponse.contentType
              ? { contentType: spec.rawResponse.contentType, schema: { type: 'string' } }
              : {}),
          ...(spec.rawResponse.headers ? { headers: spec.rawResponse.headers } : {}),
        }
      : { description: status === 204 ? 'done; no body' : 'done' };
  return {
    operationId: spec.operationId,
    summary: spec.summary,
    description: spec.description,
    tags: spec.tags,
    auth: spec.auth,
    ...(parameters.length ? { parameters } : {}),
    ...(body ? { requestBody: body } : {}),
    responses: {
      [status]: ok,
      ...Object.fromEntries(Object.entries(spec.errors ?? {}).map(([code, when]) => [code, { description: when }])),
    },
    ...(spec.daemon ? { daemon: spec.daemon } : {}),
    ...(spec.plugin ? { plugin: spec.plugin } : {}),
  };
}

/**
 * An Express handler running `fn` with the call context for `auth` (the access check first); whatever
 * it throws goes to the error handler. defineRoute and the generic resource routes both run through it.
 */
export function withContext<A extends AuthRequirement>(
  deps: Deps,
  auth: A,
  fn: (ctx: CtxFor<A>, req: Request, res: Response) => Promise<void>,
): RequestHandler {
  return async (req, res, next) => {
    try {
      await fn(contextFor(req, deps, auth) as CtxFor<A>, req, res);
    } catch (e) {
      next(e);
    }
  };
}

/** Declares one route on `router` and its operation in `openapi`. */
export function defineRoute<A extends AuthRequirement, P = undefined, Q = undefined, B = undefined, R = undefined>(
  router: Router,
  deps: Deps,
  openapi: OpenApiRegistry,
  spec: RouteSpec<A, P, Q, B, R>,
): void {
  const doc = operationDoc(spec as RouteSpec<AuthRequirement, unknown, unknown, unknown, unknown>);
  const status = spec.status ?? 200;
  const params = (spec.params as AnyObject | undefined) ?? paramsSchema(spec.path);
  // Like a body, a query names only what the route reads: a misspelt parameter is refused, not ignored.
  const query = ((spec.query as AnyObject | undefined) ?? z.object({})).strict();
  const run = withContext(deps, spec.auth, async (ctx, req, res) => {
    const input = {
      params: parseOrThrow(params, req.params, 'path'),
      query: parseOrThrow(query, req.query, 'query'),
      body: spec.body && !(spec.bodyOptional && isEmptyBody(req.body)) ? parseOrThrow(spec.body, req.body, 'request body') : undefined,
    } as RouteInput<P, Q, B>;
    const rawSchema = spec.rawResponse?.schema;
    if (CHECK_RESPONSES && rawSchema) checkJsonWrites(res, rawSchema, `${spec.method.toUpperCase()} ${spec.path}`);
    const out = await spec.handler(ctx, input, req, res);
    if (res.headersSent || spec.rawResponse) return;
    if (!spec.response) return void res.status(status).end();
    if (CHECK_RESPONSES) checkResponse(spec.response, out, `${spec.method.toUpperCase()} ${spec.path}`);
    res.status(status).json(out);
  });
  router[spec.method](spec.path, ...(spec.before ?? []), run);
  openapi.add(spec.method, spec.path, doc);
}

/** A handler that writes its own JSON success answer (rawResponse.schema): checked as it is sent. */
function checkJsonWrites(res: Response, schema: z.ZodType, route: string): void {
  const json = res.json.bind(res);
  res.json = (body: unknown) => {
    if (res.statusCode < 300) checkResponse(schema, body, route);
    return json(body);
  };
}

function checkResponse(schema: z.ZodType, value: unknown, route: string): void {
  const wire: unknown = value === undefined ? undefined : JSON.parse(JSON.stringify(value));
  const res = schema.safeParse(wire);
  if (!res.success)
    throw new Error(
      `${route} answered outside its response schema: ${res.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
    );
}

/** Streams a body to the answer; a client that went away mid-stream is not an error of the server. */
export async function streamTo(res: Response, source: NodeJS.ReadableStream): Promise<void> {
  try {
    await pipeline(source, res);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ERR_STREAM_PREMATURE_CLOSE' && res.destroyed) return;
    throw e;
  }
}
