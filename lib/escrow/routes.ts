import express, { type Router } from 'express';
import type { OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { auditRoutes } from './audit-routes.js';
import { exportRoutes } from './export-routes.js';
import { mailboxInfoRoutes } from './mailbox-info.js';
import { requestRoutes } from './request-routes.js';
import { scopeRoutes } from './scope-routes.js';

/**
 * The escrow routes beyond the generic resource routes (Spec: Escrow routes, Key escrow access), and
 * a mailbox's escrow info. Mounted before the generic routes. Rules of who may do what: lib/escrow/access.ts.
 */
export function escrowRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  scopeRoutes(router, deps, openapi);
  requestRoutes(router, deps, openapi);
  exportRoutes(router, deps, openapi);
  auditRoutes(router, deps, openapi);
  mailboxInfoRoutes(router, deps, openapi);
  return router;
}
