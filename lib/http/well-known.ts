import express, { type Router } from 'express';
import { z } from 'zod';
import type { Config } from '../config/index.js';
import type { Deps } from '../context/index.js';
import { defineRoute } from './define-route.js';
import type { OpenApiRegistry } from './openapi.js';

/**
 * The route reads the config only. The api daemon still hands the config alone: its context then
 * has no store (defineRoute's call context needs one object to hold; nothing reads it).
 */
const depsOf = (source: Deps | Config): Deps => ('store' in source ? source : ({ config: source, store: {} } as unknown as Deps));

/** Spec: Finding the server from an address — GET /.well-known/svc/server-info → {authServerUrl}; public. */
export function serverInfoRouter(source: Deps | Config, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const deps = depsOf(source);
  const body = { authServerUrl: deps.config.get('mail:auth_server_url') };
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/.well-known/svc/server-info',
    operationId: 'server_info',
    summary: 'Where to sign in: {authServerUrl} (from mail:auth_server_url); public and rate-limited',
    tags: ['discovery'],
    auth: 'none',
    response: z.object({ authServerUrl: z.string() }),
    handler: async (_ctx, _input, _req, res) => {
      res.set('Cache-Control', 'public, max-age=300');
      return body;
    },
  });
  return router;
}
