import express, { type Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../context/index.js';
import { defineRoute } from './define-route.js';
import type { OpenApiRegistry } from './openapi.js';

/** Spec: Finding the server from an address — GET /.well-known/svc/server-info → {authServerUrl}; public. */
export function serverInfoRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
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
