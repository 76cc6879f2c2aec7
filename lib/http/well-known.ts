import express, { type Router } from 'express';
import type { Config } from '../config/index.js';
import type { OpenApiRegistry } from './openapi.js';

/** Spec: Finding the server from an address — GET /.well-known/svc/server-info → {authServerUrl}; public. */
export function serverInfoRouter(config: Config, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const body = { authServerUrl: config.get('mail:auth_server_url') };
  router.get('/.well-known/svc/server-info', (_req, res) => {
    res.set('Cache-Control', 'public, max-age=300').json(body);
  });
  openapi.add('get', '/.well-known/svc/server-info', {
    operationId: 'server_info',
    summary: 'Where to sign in: {authServerUrl} (from mail:auth_server_url); public and rate-limited',
    tags: ['discovery'],
    auth: 'none',
    responses: {
      200: {
        description: '{authServerUrl}',
        schema: { type: 'object', required: ['authServerUrl'], properties: { authServerUrl: { type: 'string' } } },
      },
    },
  });
  return router;
}
