import type { Router } from 'express';
import type { OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import type { PluginHost } from './host.js';
import { pluginAdminRouter } from './admin-routes.js';
import { deviceRouter } from './device-routes.js';
import { pluginRouter } from './router.js';

/** What the api daemon serves of the plugins: their administration, the mobile devices, their /api/mail/<plugin> routes. */
export function pluginApiRouters(host: PluginHost, deps: Deps, openapi: OpenApiRegistry): Router[] {
  return [pluginAdminRouter(host, deps, openapi), deviceRouter(deps, openapi), pluginRouter(host, { side: 'api', openapi })];
}
