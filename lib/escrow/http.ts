import type { Request, Response, Router } from 'express';
import { requireTrusted } from '../auth/index.js';
import { ctxOf } from '../http/index.js';
import type { OpenApiRegistry, OperationDoc } from '../http/index.js';
import type { Ctx, Deps } from '../context/index.js';

export type Handler = (ctx: Ctx, req: Request, res: Response) => Promise<void>;

export interface RouteDoc {
  summary: string;
  description?: string;
  body?: object;
  query?: OperationDoc['parameters'];
  status?: number;
  response?: object;
  contentType?: string;
  errors?: Record<string, string>;
}

const COMMON_ERRORS = {
  403: 'api-103 / api-104: a trusted role with fresh elevation is required; api-102: see the description',
  404: 'api-107: no such record, or one bound to a scope the caller does not hold',
};

export type AddRoute = (method: 'get' | 'post' | 'delete', path: string, fn: Handler, doc: RouteDoc) => void;

/**
 * Registers escrow routes on a router: each one needs a trusted role with fresh elevation (Spec:
 * Authentication — escrow is sensitive administration) and gets its OpenAPI entry.
 */
export function escrowRoutes(router: Router, deps: Deps, openapi: OpenApiRegistry): AddRoute {
  return (method, path, fn, doc) => {
    router[method](path, async (req: Request, res: Response, next: (e?: unknown) => void) => {
      try {
        const ctx = ctxOf(req, deps);
        requireTrusted(ctx.principal, ctx.config, { fresh: true });
        await fn(ctx, req, res);
      } catch (e) {
        next(e);
      }
    });
    const status = doc.status ?? 200;
    const errors = { ...COMMON_ERRORS, ...(doc.errors ?? {}) };
    openapi.add(method, path, {
      operationId: `escrow_${path.split('/').slice(3).join('_').replace(/[:-]/g, '')}_${method}`,
      summary: doc.summary,
      description: doc.description,
      tags: ['escrow'],
      auth: 'trusted-fresh',
      parameters: doc.query,
      ...(doc.body ? { requestBody: { schema: doc.body } } : {}),
      responses: {
        [status]: {
          description: 'ok',
          ...(doc.response ? { schema: doc.response } : {}),
          ...(doc.contentType ? { contentType: doc.contentType } : {}),
        },
        ...Object.fromEntries(Object.entries(errors).map(([k, v]) => [k, { description: v }])),
      },
    });
  };
}
