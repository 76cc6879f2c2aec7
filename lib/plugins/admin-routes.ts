import express, { type Request, type Response, type Router } from 'express';
import { z } from 'zod';
import { requireTrusted } from '../auth/index.js';
import { schema } from '../config/index.js';
import { notFound, parseOrThrow } from '../errors/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry } from '../http/index.js';
import { type Ctx, type Deps } from '../context/index.js';
import { daemonOf } from './define.js';
import type { PluginHost } from './host.js';
import type { PluginManifest } from './types.js';

const nameParam = z.string().regex(/^[a-z][a-z0-9-]{0,39}$/, 'a plugin name: lower-case letters, digits and dashes');
const stateBody = z.object({ enabled: z.boolean() }).strict();

const pluginSchema = {
  type: 'object',
  required: ['name', 'version', 'summary', 'enabled', 'routes', 'protocols', 'settings'],
  properties: {
    name: { type: 'string' },
    version: { type: 'string' },
    summary: { type: 'string' },
    enabled: { type: 'boolean', description: 'stored state; no record means enabled' },
    changedBy: { type: ['string', 'null'] },
    changedAt: { type: ['string', 'null'], format: 'date-time' },
    routes: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          method: { type: 'string' },
          path: { type: 'string' },
          daemon: { type: 'string', enum: ['api', 'protocols'] },
          auth: { type: 'string' },
        },
      },
    },
    protocols: { type: 'array', items: { type: 'string' }, description: 'what Autodiscover advertises while the plugin is enabled' },
    settings: { type: 'array', items: { type: 'object', properties: { name: { type: 'string' }, doc: { type: 'string' } } } },
  },
};

/**
 * Spec: /api/system/plugins — sensitive administration (Spec: Roles and elevation): every route
 * needs a trusted role with elevation no older than mail:security:elevation_max_age_seconds, and
 * every change is audited. A disabled plugin's routes answer 404 and its protocols are not advertised.
 */
export function pluginAdminRouter(host: PluginHost, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const tags = ['system/plugins'];
  const admin = (req: Request): Ctx => {
    const ctx = ctxOf(req, deps);
    requireTrusted(ctx.principal, ctx.config, { fresh: true });
    return ctx;
  };
  const find = (raw: unknown): PluginManifest => {
    const name = parseOrThrow(nameParam, raw, 'invalid plugin name');
    const m = host.manifests.find((x) => x.name === name);
    if (!m) throw notFound(`No plugin ${name}`);
    return m;
  };
  const view = async (m: PluginManifest) => {
    const rec = await host.states.record(m.name);
    return {
      name: m.name,
      version: m.version,
      summary: m.summary,
      enabled: rec ? rec.enabled : true,
      changedBy: rec?.changedBy ?? null,
      changedAt: rec?.updatedAt ?? null,
      routes: m.routes.map((r) => ({ method: r.method.toUpperCase(), path: r.path, daemon: daemonOf(r), auth: r.auth })),
      protocols: m.protocols.map((p) => p.name),
      settings: m.settings.map((name) => ({ name, doc: schema[name].doc })),
    };
  };
  const wrap = (fn: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response, next: (e?: unknown) => void) => {
    fn(req, res).catch(next);
  };

  router.get(
    '/api/system/plugins',
    wrap(async (req, res) => {
      admin(req);
      res.json(await Promise.all(host.manifests.map(view)));
    }),
  );
  openapi.add('get', '/api/system/plugins', {
    operationId: 'system_plugins_list',
    tags,
    auth: 'trusted-fresh',
    summary: 'The installed plugins: version, enabled state, routes (and the daemon serving each), advertised protocols, settings',
    responses: { 200: { description: 'every plugin', schema: { type: 'array', items: pluginSchema } } },
  });

  router.get(
    '/api/system/plugins/:name',
    wrap(async (req, res) => {
      admin(req);
      res.json(await view(find(req.params.name)));
    }),
  );
  openapi.add('get', '/api/system/plugins/:name', {
    operationId: 'system_plugins_get',
    tags,
    auth: 'trusted-fresh',
    summary: 'One plugin (404 api-107 when none has that name)',
    responses: { 200: { description: 'the plugin', schema: pluginSchema } },
  });

  router.put(
    '/api/system/plugins/:name',
    wrap(async (req, res) => {
      const ctx = admin(req);
      const m = find(req.params.name);
      const { enabled } = parseOrThrow(stateBody, req.body, 'invalid plugin state');
      await host.states.set(ctx, m.name, enabled);
      res.json(await view(m));
    }),
  );
  openapi.add('put', '/api/system/plugins/:name', {
    operationId: 'system_plugins_update',
    tags,
    auth: 'trusted-fresh',
    summary:
      'Enable or disable a plugin ({enabled}); audited as plugins.enable / plugins.disable. Disabled: its routes answer 404 and Autodiscover stops advertising its protocols, in every daemon copy',
    requestBody: {
      schema: { type: 'object', required: ['enabled'], additionalProperties: false, properties: { enabled: { type: 'boolean' } } },
    },
    responses: { 200: { description: 'the plugin after the change', schema: pluginSchema } },
  });
  return router;
}
