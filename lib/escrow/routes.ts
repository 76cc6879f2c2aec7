import express, { type Router } from 'express';
import type { OpenApiRegistry } from '../http/index.js';
import type { Deps } from '../context/index.js';
import { auditRoutes } from './audit-routes.js';
import { exportRoutes } from './export-routes.js';
import { escrowRoutes } from './http.js';
import { mailboxEscrowRouter } from './mailbox-info.js';
import { requestRoutes } from './request-routes.js';
import { scopeRoutes } from './scope-routes.js';

/**
 * The escrow routes beyond the generic resource routes (Spec: Escrow routes, Key escrow access).
 * Mounted before the generic routes. Rules of who may do what: lib/escrow/access.ts.
 */
export function escrowRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const route = escrowRoutes(router, deps, openapi);
  scopeRoutes(route);
  requestRoutes(route);
  exportRoutes(route);
  auditRoutes(route);
  router.use(mailboxEscrowRouter(deps, openapi));
  return router;
}
