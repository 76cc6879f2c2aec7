import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import express, { type Router } from 'express';
import YAML from 'yaml';
import { z } from 'zod';
import { requireSignedIn } from '../auth/index.js';
import { catalogue } from '../errors/index.js';

/** Who may call an operation; the authorization matrix and the docs read this. */
export type AuthRequirement = 'none' | 'signed-in' | 'trusted' | 'trusted-fresh' | 'ingest-secret' | 'basic-or-token';

export interface OperationDoc {
  operationId: string;
  summary: string;
  description?: string;
  tags: string[];
  auth: AuthRequirement;
  parameters?: Array<{ name: string; in: 'path' | 'query' | 'header'; required?: boolean; description?: string; schema: object }>;
  requestBody?: { contentType?: string; schema: object; required?: boolean };
  responses: Record<
    string,
    { description: string; schema?: object; contentType?: string; headers?: Record<string, { description: string; schema: object }> }
  >;
  /** Served by another daemon than the one whose document this is (plugin routes: protocols). */
  daemon?: 'api' | 'protocols';
  /** The plugin that declares the route. */
  plugin?: string;
}

const AUTH_TEXT: Record<AuthRequirement, string> = {
  none: 'No authentication.',
  'signed-in': 'A signed-in caller (Bearer token or jwt cookie; cookie writes need x-csrf-token).',
  trusted: 'A trusted role (admin) in an elevated token.',
  'trusted-fresh': 'A trusted role with elevation no older than mail:security:elevation_max_age_seconds.',
  'ingest-secret': 'Authorization: Bearer <mail:transport:ingest:secret>; no proxy headers.',
  'basic-or-token': 'A session token, or an app password over HTTP Basic on the paths in mail:basic_auth:paths.',
};

/** JSON Schema (2020-12, as OpenAPI 3.1 takes it) from a zod schema. */
export function jsonSchema(schema: z.ZodType, io: 'input' | 'output' = 'output'): object {
  const out = z.toJSONSchema(schema, { target: 'draft-2020-12', unrepresentable: 'any', io }) as Record<string, unknown>;
  delete out.$schema;
  return out;
}

export const errorBodySchema = {
  type: 'object',
  required: ['code', 'status', 'message'],
  properties: {
    code: { type: 'string', enum: Object.keys(catalogue), description: 'api-1xx code; see the ErrorCodes table in the description' },
    status: { type: 'integer' },
    message: { type: 'string' },
    details: { type: 'array', items: { type: 'object', properties: { path: { type: 'string' }, message: { type: 'string' } } } },
  },
};

/** Collects every route's declaration; the document is generated from it (never written by hand). */
export class OpenApiRegistry {
  readonly #paths = new Map<string, Map<string, OperationDoc>>();
  readonly #schemas = new Map<string, object>();

  /** A schema many operations share (a resource's record), kept once under components; answers its $ref. */
  component(name: string, schema: object): object {
    if (!this.#schemas.has(name)) this.#schemas.set(name, schema);
    return { $ref: `#/components/schemas/${name}` };
  }

  add(method: string, path: string, doc: OperationDoc): void {
    const oaPath = path.replace(/:(\w+)/g, '{$1}');
    let ops = this.#paths.get(oaPath);
    if (!ops) this.#paths.set(oaPath, (ops = new Map()));
    if (ops.has(method.toLowerCase())) throw new Error(`OpenAPI: ${method} ${path} declared twice`);
    ops.set(method.toLowerCase(), doc);
  }

  operations(): Array<{ method: string; path: string; doc: OperationDoc }> {
    return [...this.#paths].flatMap(([path, ops]) => [...ops].map(([method, doc]) => ({ method, path, doc })));
  }

  document(info: { title: string; version: string }): object {
    const paths: Record<string, Record<string, unknown>> = {};
    for (const { method, path, doc } of this.operations()) {
      const params = [...(doc.parameters ?? [])];
      for (const m of path.matchAll(/\{(\w+)\}/g)) {
        if (!params.some((p) => p.name === m[1] && p.in === 'path'))
          params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } });
      }
      const responses: Record<string, unknown> = {};
      for (const [status, r] of Object.entries(doc.responses)) {
        responses[status] = {
          description: r.description,
          ...(r.headers ? { headers: r.headers } : {}),
          ...(r.schema ? { content: { [r.contentType ?? 'application/json']: { schema: r.schema } } } : {}),
        };
      }
      responses.default = {
        description: 'Error (code, status, message)',
        content: { 'application/json': { schema: { $ref: '#/components/schemas/Error' } } },
      };
      (paths[path] ??= {})[method] = {
        operationId: doc.operationId,
        summary: doc.summary,
        description: [doc.description, `Authentication: ${AUTH_TEXT[doc.auth]}`].filter(Boolean).join('\n\n'),
        tags: doc.tags,
        'x-svcmail-auth': doc.auth,
        ...(doc.daemon ? { 'x-svcmail-daemon': doc.daemon } : {}),
        ...(doc.plugin ? { 'x-svcmail-plugin': doc.plugin } : {}),
        security:
          doc.auth === 'none'
            ? []
            : doc.auth === 'ingest-secret'
              ? [{ ingestSecret: [] }]
              : doc.auth === 'basic-or-token'
                ? [{ bearer: [] }, { cookie: [] }, { basic: [] }]
                : [{ bearer: [] }, { cookie: [] }],
        ...(params.length ? { parameters: params } : {}),
        ...(doc.requestBody
          ? {
              requestBody: {
                required: doc.requestBody.required ?? true,
                content: { [doc.requestBody.contentType ?? 'application/json']: { schema: doc.requestBody.schema } },
              },
            }
          : {}),
        responses,
      };
    }
    const codes = Object.entries(catalogue)
      .map(([code, d]) => `| ${code} | ${d.status} | ${d.message} | ${d.doc} |`)
      .join('\n');
    return {
      openapi: '3.1.0',
      info: {
        ...info,
        description: `The svcmail HTTP API. Paths have no version. Errors are JSON with code, status and message.\n\n### ErrorCodes\n\n| code | status | message | when |\n|---|---|---|---|\n${codes}`,
      },
      paths,
      components: {
        schemas: { Error: errorBodySchema, ...Object.fromEntries(this.#schemas) },
        securitySchemes: {
          bearer: { type: 'http', scheme: 'bearer', bearerFormat: 'JWT' },
          cookie: { type: 'apiKey', in: 'cookie', name: 'jwt' },
          basic: { type: 'http', scheme: 'basic', description: 'App passwords, only on mail:basic_auth:paths' },
          ingestSecret: { type: 'http', scheme: 'bearer', description: 'mail:transport:ingest:secret' },
        },
      },
    };
  }
}

const VIEWER_HTML = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>svcmail API</title>
<link rel="stylesheet" href="openapi/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="openapi/assets/swagger-ui-bundle.js"></script>
<script src="openapi/assets/viewer-init.js"></script></body></html>`;

const VIEWER_INIT = `window.ui = SwaggerUIBundle({ url: 'openapi/json', dom_id: '#swagger-ui', withCredentials: true });`;

/** GET /api/openapi (offline viewer), /api/openapi/json, /api/openapi/yaml: signed-in callers only. */
export function openApiRouter(registry: OpenApiRegistry, info: { title: string; version: string }): Router {
  const router = express.Router();
  const assets = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  let cached: object | null = null;
  const doc = () => (cached ??= registry.document(info));
  router.use('/api/openapi', (req, _res, next) => {
    try {
      requireSignedIn(req.principal);
      next();
    } catch (e) {
      next(e);
    }
  });
  router.get('/api/openapi', (_req, res) => {
    res.setHeader(
      'Content-Security-Policy',
      "default-src 'self'; img-src 'self' data:; style-src 'self' 'unsafe-inline'; script-src 'self'",
    );
    res.type('html').send(VIEWER_HTML);
  });
  router.get('/api/openapi/assets/viewer-init.js', (_req, res) => res.type('application/javascript').send(VIEWER_INIT));
  router.use('/api/openapi/assets', express.static(assets, { index: false, fallthrough: false }));
  router.get('/api/openapi/json', (_req, res) => res.json(doc()));
  let yaml: string | null = null;
  router.get('/api/openapi/yaml', (_req, res) => res.type('application/yaml').send((yaml ??= YAML.stringify(doc()))));
  return router;
}
