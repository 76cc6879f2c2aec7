import express, { type Router } from 'express';
import { z } from 'zod';
import { defineRoute, type OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { findPlugin, listPlugins, pluginName, pluginStateChange, pluginView, setPluginEnabled, viewPlugin } from './admin.js';
import type { PluginHost } from './host.js';

/**
 * Spec: /api/system/plugins — sensitive administration (Spec: Roles and elevation): every route
 * needs a trusted role with elevation no older than mail:security:elevation_max_age_seconds, and
 * every change is audited. A disabled plugin's routes answer 404 and its protocols are not advertised.
 */
export function pluginAdminRouter(host: PluginHost, deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const tags = ['system/plugins'];
  const params = z.object({ name: pluginName });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/system/plugins',
    operationId: 'system_plugins_list',
    summary: 'The installed plugins: version, enabled state, routes (and the daemon serving each), advertised protocols, settings',
    tags,
    auth: 'trusted-fresh',
    response: z.array(pluginView),
    handler: () => listPlugins(host),
  });

  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/system/plugins/:name',
    operationId: 'system_plugins_get',
    summary: 'One plugin (404 api-107 when none has that name)',
    tags,
    auth: 'trusted-fresh',
    params,
    response: pluginView,
    handler: (_ctx, { params }) => viewPlugin(host, findPlugin(host, params.name)),
  });

  defineRoute(router, deps, openapi, {
    method: 'put',
    path: '/api/system/plugins/:name',
    operationId: 'system_plugins_update',
    summary:
      'Enable or disable a plugin ({enabled}); audited as plugins.enable / plugins.disable. Disabled: its routes answer 404 and Autodiscover stops advertising its protocols, in every daemon copy',
    tags,
    auth: 'trusted-fresh',
    params,
    body: pluginStateChange,
    response: pluginView,
    handler: (ctx, { params, body }) => setPluginEnabled(ctx, host, params.name, body.enabled),
  });
  return router;
}
