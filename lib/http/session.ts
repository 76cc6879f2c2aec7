import express, { type Router } from 'express';
import { z } from 'zod';
import type { Deps } from '../context/index.js';
import { defineRoute } from './define-route.js';
import type { OpenApiRegistry } from './openapi.js';

/** Spec: Token lifecycle — the web app renews its token 45 minutes into its one-hour life. */
const RENEW_BEFORE_EXPIRY_MS = 15 * 60_000;

/**
 * GET /api/session: the caller's session as the token says — who, with which roles, elevated when,
 * until when, and when the web app should renew it (the cookie is HttpOnly: the page cannot read it).
 */
export function sessionRouter(deps: Deps, openapi: OpenApiRegistry): Router {
  const router = express.Router();
  const maxAge = deps.config.get('mail:security:elevation_max_age_seconds') * 1000;
  defineRoute(router, deps, openapi, {
    method: 'get',
    path: '/api/session',
    operationId: 'session',
    summary: "The caller's session: uid, roles, elevation and its freshness, expiry and when to renew (through the sign-in service)",
    tags: ['auth'],
    auth: 'signed-in',
    response: z.object({
      uid: z.string(),
      roles: z.array(z.string()),
      via: z.string().describe('bearer, cookie, basic, dev or cli'),
      elevatedAt: z.iso.datetime().nullable(),
      elevatedUntil: z.iso
        .datetime()
        .nullable()
        .describe('sensitive administration needs elevation no older than mail:security:elevation_max_age_seconds'),
      expiresAt: z.iso.datetime(),
      renewAt: z.iso.datetime().describe('45 minutes into a one-hour token: 15 minutes before it expires'),
    }),
    handler: async (ctx, _input, _req, res) => {
      res.set('Cache-Control', 'no-store');
      const p = ctx.principal;
      const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
      return {
        uid: p.uid,
        roles: p.roles,
        via: p.via,
        elevatedAt: iso(p.elevatedAt),
        elevatedUntil: iso(p.elevatedAt === null ? null : p.elevatedAt + maxAge),
        expiresAt: new Date(p.expiresAt).toISOString(),
        renewAt: new Date(Math.max(Date.now(), p.expiresAt - RENEW_BEFORE_EXPIRY_MS)).toISOString(),
      };
    },
  });
  return router;
}
