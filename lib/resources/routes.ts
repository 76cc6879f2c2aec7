import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { parseOrThrow } from '../errors/index.js';
import { withContext } from '../http/index.js';
import { jsonSchema, type AuthRequirement, type OpenApiRegistry, type OperationDoc } from '../http/index.js';
import { operationsOf, pathOf, type Operation, type ResourceDecl } from './define.js';
import { type Ctx, type Deps } from '../context/index.js';
import { LIST_LIMIT_DEFAULT, LIST_LIMIT_MAX, queryFields, type QueryParams } from './query.js';
import { schemasOf } from './schemas.js';
import { queryableColumns } from '../storage/index.js';
import type { ResourceService } from './service.js';

type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

const deleteBody = z.strictObject({ version: z.unknown().optional() });

const bulkResult = {
  type: 'object',
  properties: {
    results: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          uid: { type: 'string' },
          status: { type: 'integer' },
          version: { type: 'integer' },
          code: { type: 'string' },
          message: { type: 'string' },
        },
      },
    },
  },
};

function authOf(decl: ResourceDecl, op: Operation, trustedRoles: readonly string[]): AuthRequirement {
  if (decl.sensitive?.includes(op)) return 'trusted-fresh';
  // Creating a record with no parent is a class-level check (trusted roles count) whatever the scope.
  const classCreate = op === 'create' && !decl.parent;
  const grants = classCreate ? (decl.createAcl ?? []) : decl.defaultAcl;
  if ((classCreate || decl.scope === 'global') && grants.length && grants.every((g) => trustedRoles.some((r) => g.subject === `role:${r}`)))
    return 'trusted';
  return 'signed-in';
}

/** The record's name under components/schemas: its group and name in PascalCase (mail/calendar-events → MailCalendarEvents). */
const componentName = (decl: ResourceDecl) =>
  `${decl.group ?? ''}-${decl.name}`
    .split(/[-/]/)
    .filter(Boolean)
    .map((w) => w[0].toUpperCase() + w.slice(1))
    .join('');

/** The query parameters of list and count: page, sort, the admin view, and a filter per queryable field. */
function listParamsOf(decl: ResourceDecl): NonNullable<OperationDoc['parameters']> {
  const filters = Object.entries(queryFields(decl)).map(([name, c]) => ({
    name,
    in: 'query' as const,
    description: `filter by ${name} (repeat for any of several values)`,
    schema: { type: c.kind === 'integer' ? 'integer' : c.kind === 'number' ? 'number' : c.kind === 'boolean' ? 'boolean' : 'string' },
  }));
  return [
    {
      name: 'limit',
      in: 'query' as const,
      description: `page size, default ${LIST_LIMIT_DEFAULT}; above ${LIST_LIMIT_MAX} is refused with api-106`,
      schema: { type: 'integer', minimum: 1, maximum: LIST_LIMIT_MAX },
    },
    { name: 'page', in: 'query' as const, description: 'zero-based page', schema: { type: 'integer', minimum: 0 } },
    {
      name: 'sort',
      in: 'query' as const,
      description: `field, -field, a,-b, or JSON {"field":1,"other":-1}; default ${decl.defaultSort?.length ? decl.defaultSort.map((k) => `${k.dir === 'desc' ? '-' : ''}${k.field}`).join(',') : 'uid (creation order)'}`,
      schema: { type: 'string' },
    },
    ...(decl.adminView
      ? [
          {
            name: 'scope',
            in: 'query' as const,
            description: 'admin: administrative details only (trusted role, fresh elevation, audited)',
            schema: { type: 'string', enum: ['admin'] },
          },
        ]
      : []),
    ...filters,
  ];
}

/** What every operation's document of one resource shares. */
interface DocParts {
  decl: ResourceDecl;
  record: object;
  base: Pick<OperationDoc, 'tags' | 'auth'>;
  id: string;
  note: string;
}

function docFor(decl: ResourceDecl, op: Operation, auth: AuthRequirement, openapi: OpenApiRegistry): OperationDoc {
  const parts: DocParts = {
    decl,
    record: openapi.component(componentName(decl), jsonSchema(schemasOf(decl).record)),
    base: { tags: [decl.group ? `${decl.group}/${decl.name}` : decl.name], auth },
    id: `${decl.group || 'api'}_${decl.name}_${op}`.replace(/-/g, '_'),
    note: decl.accessNote ? ` ${decl.accessNote}` : '',
  };
  return op === 'list' || op === 'head' || op === 'get' ? readDoc(parts, op) : writeDoc(parts, op);
}

/** The reads: list, count, one record. */
function readDoc({ decl, record, base, id, note }: DocParts, op: 'list' | 'head' | 'get'): OperationDoc {
  const scopeNote =
    decl.scope === 'mailbox' ? ' Mailbox-scoped: checked with trusted roles stripped; a record the caller cannot see answers 404.' : '';
  const listParams = listParamsOf(decl);
  switch (op) {
    case 'list':
      return {
        ...base,
        operationId: id,
        summary: `List ${decl.name}`,
        description: `${decl.summary}.${scopeNote}${note}`,
        parameters: listParams,
        responses: { 200: { description: 'records, in the requested order', schema: { type: 'array', items: record } } },
      };
    case 'head':
      return {
        ...base,
        operationId: id,
        summary: `Count ${decl.name}`,
        description: `The count of matching records is answered in Content-Length (and X-Total-Count); there is no body.${note}`,
        parameters: listParams,
        responses: { 200: { description: 'count in Content-Length' } },
      };
    case 'get':
      return {
        ...base,
        operationId: id,
        summary: `Read one ${decl.entity}`,
        description: `${scopeNote}${note}`.trim() || undefined,
        parameters: decl.adminView ? listParams.filter((p) => p.name === 'scope') : undefined,
        responses: { 200: { description: decl.entity, schema: record } },
      };
  }
}

/** The writes: create, update (whole, one property, many), delete (one, many). */
function writeDoc({ decl, record, base, id, note }: DocParts, op: Exclude<Operation, 'list' | 'head' | 'get'>): OperationDoc {
  const s = schemasOf(decl);
  const versionBody = { type: 'object', required: ['version'], properties: { version: { type: 'integer' } }, additionalProperties: false };
  switch (op) {
    case 'create':
      return {
        ...base,
        operationId: id,
        summary: `Create a ${decl.entity}`,
        description: `The server mints uid and sets version 1.${note}`,
        requestBody: { schema: jsonSchema(s.create, 'input') },
        responses: { 201: { description: 'created', schema: record } },
      };
    case 'update':
      return {
        ...base,
        operationId: id,
        summary: `Update a ${decl.entity}`,
        description: `Changes the given fields. version must be the stored version, else 409 api-108.${note}`,
        requestBody: { schema: jsonSchema(s.update, 'input') },
        responses: { 200: { description: 'updated', schema: record } },
      };
    case 'updateProperty':
      return {
        ...base,
        operationId: id,
        summary: `Update one property of a ${decl.entity}`,
        description: note.trim() || undefined,
        requestBody: {
          schema: {
            type: 'object',
            required: ['value', 'version'],
            properties: { value: {}, version: { type: 'integer' } },
            additionalProperties: false,
          },
        },
        responses: { 200: { description: 'updated', schema: record } },
      };
    case 'bulkUpdate':
      return {
        ...base,
        operationId: id,
        summary: `Update many ${decl.name}`,
        description: `An array of {uid, version, ...fields}; each item succeeds or fails on its own.${note}`,
        requestBody: { schema: { type: 'array', maxItems: 1000, items: jsonSchema(s.update.extend({ uid: z.string() }), 'input') } },
        responses: { 200: { description: 'a result per item', schema: bulkResult } },
      };
    case 'delete':
      return {
        ...base,
        operationId: id,
        summary: `Delete a ${decl.entity}`,
        description: `version in the body ({"version": n}) or ?version=n; stale answers 409 api-108.${note}`,
        parameters: [{ name: 'version', in: 'query', schema: { type: 'integer' } }],
        requestBody: { schema: versionBody, required: false },
        responses: { 204: { description: 'deleted' } },
      };
    case 'bulkDelete':
      return {
        ...base,
        operationId: id,
        summary: `Delete many ${decl.name}`,
        description: note.trim() || undefined,
        requestBody: {
          schema: {
            type: 'array',
            maxItems: 1000,
            items: {
              type: 'object',
              required: ['uid', 'version'],
              properties: { uid: { type: 'string' }, version: { type: 'integer' } },
              additionalProperties: false,
            },
          },
        },
        responses: { 200: { description: 'a result per item', schema: bulkResult } },
      };
  }
}

/**
 * A list answer's date fields as their ISO text, in place, before it is serialised: JSON.stringify
 * calls a Date's toJSON from the engine for every date (two per record), which cost more than a
 * third again of serialising a page of 100 records; a call from here costs a fraction of that.
 * The bytes are the same. The records are the caller's own (the store never shares them).
 */
function datesAsText(rows: Array<Record<string, unknown>>, fields: readonly string[]): Array<Record<string, unknown>> {
  for (const row of rows) {
    for (const f of fields) {
      const v = row[f];
      if (v instanceof Date) row[f] = v.toJSON();
    }
  }
  return rows;
}

/**
 * The generic routes of the spec for each resource, described in OpenAPI. Each resource's routes
 * are a router of their own (full paths), found by the request path's resource prefix in one map
 * lookup: Express would try each resource's layer in turn. Looked through like a router (`stack`:
 * every resource's route layers) by route listings.
 */
export function resourceRouter(decls: readonly ResourceDecl[], service: ResourceService, deps: Deps, openapi: OpenApiRegistry): Router {
  const byBase = new Map<string, Router>();
  const trusted = deps.config.get('trusted_roles');
  for (const decl of decls) {
    const base = pathOf(decl);
    const ops = new Set(operationsOf(decl));
    const sub = express.Router();
    byBase.set(base.toLowerCase(), sub);
    const add = (op: Operation, method: 'head' | 'get' | 'post' | 'put' | 'delete', path: string, fn: Handler) => {
      if (!ops.has(op)) return;
      sub[method](path, withContext(deps, 'signed-in', fn));
      openapi.add(method, path, docFor(decl, op, authOf(decl, op, trusted), openapi));
    };
    const q = (req: Request) => req.query as QueryParams;
    add('head', 'head', base, async (ctx, req, res) => {
      const n = await service.count(ctx, decl, q(req));
      res
        .set({ 'Content-Length': String(n), 'X-Total-Count': String(n) })
        .status(200)
        .end();
    });
    const dates = Object.entries(queryableColumns(decl.model))
      .filter(([, c]) => c.kind === 'date')
      .map(([f]) => f);
    add('list', 'get', base, async (ctx, req, res) => void res.json(datesAsText(await service.list(ctx, decl, q(req)), dates)));
    add('get', 'get', `${base}/:id`, async (ctx, req, res) => void res.json(await service.get(ctx, decl, String(req.params.id), q(req))));
    add('create', 'post', base, async (ctx, req, res) => void res.status(201).json(await service.create(ctx, decl, req.body)));
    add('bulkUpdate', 'put', base, async (ctx, req, res) => void res.json({ results: await service.bulkUpdate(ctx, decl, req.body) }));
    add(
      'update',
      'put',
      `${base}/:id`,
      async (ctx, req, res) => void res.json(await service.update(ctx, decl, String(req.params.id), req.body, q(req))),
    );
    add(
      'updateProperty',
      'put',
      `${base}/:id/:property`,
      async (ctx, req, res) =>
        void res.json(await service.updateProperty(ctx, decl, String(req.params.id), String(req.params.property), req.body)),
    );
    add('bulkDelete', 'delete', base, async (ctx, req, res) => void res.json({ results: await service.bulkDelete(ctx, decl, req.body) }));
    add('delete', 'delete', `${base}/:id`, async (ctx, req, res) => {
      // The body, when there is one, holds the version only: another field is refused like everywhere else.
      const body = req.body === undefined ? {} : parseOrThrow(deleteBody, req.body, `delete takes {"version": n}`);
      const raw = body.version ?? req.query.version;
      const version = typeof raw === 'string' && /^\d+$/.test(raw) ? Number(raw) : raw;
      await service.remove(ctx, decl, String(req.params.id), version);
      res.status(204).end();
    });
  }
  const dispatch = function resourceRoutes(req: Request, res: Response, next: (e?: unknown) => void) {
    // The resource whose path is the request's path or starts it, up to a '/' (routes match case-insensitively).
    const path = req.path.toLowerCase();
    for (let end = path.length; end > 0; end = path.lastIndexOf('/', end - 1)) {
      const sub = byBase.get(path.slice(0, end));
      if (sub) return void sub(req, res, next);
    }
    next();
  };
  // Fixed once built (no route is added later): worked out once, since the gates read its length per request.
  const stack = [...byBase.values()].flatMap((r) => r.stack);
  Object.defineProperty(dispatch, 'stack', { value: stack });
  return dispatch as unknown as Router;
}
