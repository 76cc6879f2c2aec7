// lib/http/define-route.ts: one declaration validates path, query and body with zod (unknown and
// missing fields refused alike), checks access, documents the operation from the same schemas, and
// (in the suite, SVCMAIL_CHECK_RESPONSES=1) refuses an answer outside its response schema.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../../lib/config/index.js';
import type { Deps, Principal } from '../../../lib/context/index.js';
import { errorHandler } from '../../../lib/errors/index.js';
import { LocalEventBus } from '../../../lib/events/index.js';
import { defineRoute, OpenApiRegistry } from '../../../lib/http/index.js';
import { createLogger } from '../../../lib/log/index.js';
import type { Store } from '../../../lib/storage/index.js';

const config = loadConfig({ env: { NODE_ENV: 'test' } });
// The routes under test never touch the store: the context only hands it on.
const deps: Deps = { config, store: {} as Store, events: new LocalEventBus(), log: createLogger({ level: 'silent' }) };
const openapi = new OpenApiRegistry();
let server: Server;
let base = '';

const who = (roles: string[], elevatedAt: number | null): Principal => ({
  uid: 'u1',
  roles,
  elevatedAt,
  expiresAt: Date.now() + 3_600_000,
  via: 'bearer',
});

beforeAll(async () => {
  const app = express();
  app.use(express.json());
  // Who calls, from a test header (the real app verifies a token; that is not under test here).
  app.use((req, _res, next) => {
    const as = req.get('x-test-as');
    if (as === 'user') req.principal = who(['user'], null);
    if (as === 'admin') req.principal = who(['admin'], Date.now());
    if (as === 'stale-admin') req.principal = who(['admin'], Date.now() - 3_600_000);
    next();
  });
  const router = express.Router();
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/things/:id/rename',
    operationId: 'things_rename',
    summary: 'Rename a thing',
    tags: ['things'],
    auth: 'signed-in',
    params: z.object({ id: z.string().regex(/^t\d+$/) }),
    query: z.object({ dryRun: z.enum(['true', 'false']).optional() }),
    body: z.strictObject({ name: z.string().min(1).describe('the new name'), version: z.number().int().positive() }),
    status: 201,
    response: z.object({ id: z.string(), name: z.string(), by: z.string(), dryRun: z.boolean() }),
    errors: { 409: 'api-108: stale version' },
    handler: async (ctx, { params, query, body }) => ({
      id: params.id,
      name: body.name,
      by: ctx.principal.uid,
      dryRun: query.dryRun === 'true',
    }),
  });
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/things/:id',
    operationId: 'things_get',
    summary: 'Read a thing (answers outside its schema for id "bad")',
    tags: ['things'],
    auth: 'none',
    response: z.object({ id: z.string(), at: z.iso.datetime() }),
    handler: async (ctx, { params }) => (params.id === 'bad' ? { id: 7, at: 'yesterday' } : { id: params.id, at: new Date(0) }) as never,
  });
  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: '/things/:id',
    operationId: 'things_delete',
    summary: 'Delete a thing (the version may come in a body)',
    tags: ['things'],
    auth: 'signed-in',
    body: z.strictObject({ version: z.number().int() }),
    bodyOptional: true,
    headers: [{ name: 'X-Reason', description: 'why, for the audit log' }],
    response: z.object({ version: z.number().nullable() }),
    handler: async (_ctx, { body }) => ({ version: body?.version ?? null }),
  });
  defineRoute(router, deps, openapi, {
    method: 'post',
    path: '/things/:id/touch',
    operationId: 'things_touch',
    summary: 'Touch a thing: 200 with it, or 204 when there was nothing to touch (answers outside its schema for id "bad")',
    tags: ['things'],
    auth: 'none',
    rawResponse: { description: '200 with the thing, or 204', schema: z.object({ id: z.string() }) },
    handler: async (_ctx, { params }, _req, res) => {
      if (params.id === 'none') return void res.status(204).end();
      res.json(params.id === 'bad' ? { id: 1 } : { id: params.id });
    },
  });
  defineRoute(router, deps, openapi, {
    method: 'delete',
    path: '/admin/things/:id',
    operationId: 'things_purge',
    summary: 'Purge a thing',
    tags: ['things'],
    auth: 'trusted-fresh',
    status: 204,
    handler: async () => undefined,
  });
  app.use(router);
  app.use(errorHandler);
  server = createServer(app);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

async function call(method: string, path: string, as: string | null, body?: unknown) {
  const r = await fetch(base + path, {
    method,
    headers: { ...(as ? { 'x-test-as': as } : {}), ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await r.text();
  return { status: r.status, body: text ? JSON.parse(text) : null };
}

describe('defineRoute', () => {
  it('hands the handler parsed input and answers its result with the declared status', async () => {
    const r = await call('POST', '/things/t1/rename?dryRun=true', 'user', { name: 'new', version: 3 });
    expect(r).toEqual({ status: 201, body: { id: 't1', name: 'new', by: 'u1', dryRun: true } });
  });

  it.each([
    ['an unknown field', { name: 'n', version: 1, colour: 'red' }, 'colour'],
    ['a missing field', { name: 'n' }, 'version'],
    ['a wrong type', { name: 'n', version: '1' }, 'version'],
    ['no body at all', undefined, '(body)'],
  ])('refuses %s with 400 api-106 naming the field', async (_what, body, field) => {
    const r = await call('POST', '/things/t1/rename', 'user', body);
    expect(r.status).toBe(400);
    expect(r.body).toMatchObject({ code: 'api-106', status: 400 });
    expect(JSON.stringify(r.body.details)).toContain(field);
  });

  it('validates path and query parameters the same way', async () => {
    const badId = await call('POST', '/things/x1/rename', 'user', { name: 'n', version: 1 });
    expect(badId).toMatchObject({ status: 400, body: { code: 'api-106', details: [{ path: 'id' }] } });
    expect(badId.body.message).toMatch(/^path: /);
    const badQuery = await call('POST', '/things/t1/rename?dryRun=maybe', 'user', { name: 'n', version: 1 });
    expect(badQuery).toMatchObject({ status: 400, body: { code: 'api-106', details: [{ path: 'dryRun' }] } });
    // a misspelt parameter is refused, not ignored; a route that declares no query takes none
    const misspelt = await call('POST', '/things/t1/rename?dryrun=true', 'user', { name: 'n', version: 1 });
    expect(misspelt).toMatchObject({ status: 400, body: { code: 'api-106', details: [{ path: '(query)' }] } });
    expect(misspelt.body.message).toContain('dryrun');
    expect(await call('GET', '/things/t1?x=1', null)).toMatchObject({ status: 400, body: { code: 'api-106' } });
  });

  it('an optional body may be left out, but one that is sent is checked', async () => {
    expect(await call('DELETE', '/things/t1', 'user')).toEqual({ status: 200, body: { version: null } });
    expect(await call('DELETE', '/things/t1', 'user', { version: 4 })).toEqual({ status: 200, body: { version: 4 } });
    expect(await call('DELETE', '/things/t1', 'user', { version: 4, why: 'x' })).toMatchObject({ status: 400, body: { code: 'api-106' } });
    const op = (
      openapi.document({ title: 't', version: '0' }) as {
        paths: Record<string, Record<string, { requestBody: { required: boolean }; parameters: object[] }>>;
      }
    ).paths['/things/{id}'].delete;
    expect(op.requestBody.required).toBe(false);
    expect(op.parameters).toContainEqual({
      name: 'X-Reason',
      description: 'why, for the audit log',
      in: 'header',
      schema: { type: 'string' },
    });
  });

  it('checks access before reading input: 401 api-100, 403 api-103, 403 api-104', async () => {
    expect((await call('POST', '/things/t1/rename', null, { bogus: true })).body.code).toBe('api-100');
    expect((await call('DELETE', '/admin/things/t1', 'user')).body.code).toBe('api-103');
    expect((await call('DELETE', '/admin/things/t1', 'stale-admin')).body.code).toBe('api-104');
    expect((await call('DELETE', '/admin/things/t1', 'admin')).status).toBe(204);
  });

  it('sends the answer as JSON on the wire (dates as ISO text), and refuses one outside its schema with a bare 500', async () => {
    expect(await call('GET', '/things/t9', null)).toEqual({ status: 200, body: { id: 't9', at: '1970-01-01T00:00:00.000Z' } });
    expect(process.env.SVCMAIL_CHECK_RESPONSES).toBe('1');
    const bad = await call('GET', '/things/bad', null);
    expect(bad).toMatchObject({ status: 500, body: { code: 'api-199' } });
    expect(JSON.stringify(bad.body)).not.toContain('schema');
    // and a JSON answer the handler writes itself (rawResponse.schema) is checked as it is sent
    expect(await call('POST', '/things/t2/touch', null)).toEqual({ status: 200, body: { id: 't2' } });
    expect((await call('POST', '/things/none/touch', null)).status).toBe(204);
    expect(await call('POST', '/things/bad/touch', null)).toMatchObject({ status: 500, body: { code: 'api-199' } });
  });

  it('documents the operation from the same zod schemas', () => {
    const doc = openapi.document({ title: 't', version: '0' }) as {
      paths: Record<string, Record<string, Record<string, never>>>;
    };
    const op = doc.paths['/things/{id}/rename'].post as unknown as {
      operationId: string;
      'x-svcmail-auth': string;
      parameters: Array<{ name: string; in: string; schema: object }>;
      requestBody: { content: { 'application/json': { schema: Record<string, unknown> } } };
      responses: Record<string, { content?: { 'application/json': { schema: Record<string, unknown> } } }>;
    };
    expect(op.operationId).toBe('things_rename');
    expect(op['x-svcmail-auth']).toBe('signed-in');
    expect(op.parameters).toContainEqual({
      name: 'dryRun',
      in: 'query',
      required: false,
      schema: { type: 'string', enum: ['true', 'false'] },
    });
    expect(op.parameters.find((p) => p.in === 'path')?.name).toBe('id');
    const body = op.requestBody.content['application/json'].schema;
    expect(body).toMatchObject({ type: 'object', required: ['name', 'version'], additionalProperties: false });
    expect((body.properties as Record<string, { description?: string }>).name.description).toBe('the new name');
    expect(op.responses['201'].content?.['application/json'].schema).toMatchObject({ required: ['id', 'name', 'by', 'dryRun'] });
    expect(op.responses['409']).toBeDefined();
    const get = doc.paths['/things/{id}'].get as unknown as {
      responses: Record<string, { content: { 'application/json': { schema: object } } }>;
    };
    expect(get.responses['200'].content['application/json'].schema).toMatchObject({
      properties: { at: { type: 'string', format: 'date-time' } },
    });
  });
});
