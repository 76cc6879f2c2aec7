import type { RequestHandler, Router } from 'express';

// Express tries every layer of every router in turn. The api daemon mounts some twenty feature
// routers before the generic resource routes, each with its own routes, so without gates a request
// for /api/mail/folders would be matched against some 170 route patterns before reaching its own, a
// noticeable share of the list route's CPU (bench/README.md, list). A gated router is entered only
// by requests whose path starts with one of its routes' literal prefixes; the gated routers are one
// layer of the app.

/** What the router package keeps of a layer: the path it was declared with, and whether it matches every path. */
interface LayerLike {
  rawPath?: unknown;
  slash?: boolean;
}

/** The text before a path's first parameter, wildcard, group or escape, lower-cased (routes match case-insensitively). */
function literalPrefix(path: string): string {
  const i = path.search(/[:*{(\\]/);
  return (i < 0 ? path : path.slice(0, i)).toLowerCase();
}

/** The literal prefixes of a router's layers, or null when one of them can match any path (then it is always entered). */
export function prefixesOf(router: Router): string[] | null {
  const out = new Set<string>();
  for (const layer of router.stack as unknown as LayerLike[]) {
    if (layer.slash) return null;
    const raw = layer.rawPath;
    const paths =
      typeof raw === 'string' ? [raw] : Array.isArray(raw) && raw.every((p) => typeof p === 'string') ? (raw as string[]) : null;
    if (!paths) return null;
    for (const p of paths) {
      const prefix = literalPrefix(p);
      if (prefix.length <= 1) return null;
      out.add(prefix);
    }
  }
  return [...out];
}

/**
 * Several routers, in order, as one layer of the app: the request's path is read once, and each
 * router is entered only when one of its routes' literal prefixes starts it (or it can match any
 * path), the rest are passed over. One layer instead of one per router: Express walks every
 * layer of the app in turn (matching its path, trimming, restoring) for each request.
 */
export function gateGroup(routers: readonly Router[]): RequestHandler {
  // The prefixes of a router are worked out again whenever it gained layers (plugin routes), so a route added later is never skipped.
  const gates = routers.map((router) => ({ router, layers: -1, prefixes: null as string[] | null }));
  const group: RequestHandler = function gatedRouters(req, res, next) {
    const path = req.path.toLowerCase();
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) return next(err);
      while (i < gates.length) {
        const g = gates[i++];
        if (g.router.stack.length !== g.layers) {
          g.layers = g.router.stack.length;
          g.prefixes = prefixesOf(g.router);
        }
        if (!g.prefixes || g.prefixes.some((p) => path.startsWith(p))) return void g.router(req, res, step);
      }
      next();
    };
    step();
  };
  // Looked through like one router holding all their layers (route listings, the OpenAPI completeness test).
  Object.defineProperty(group, 'stack', { get: () => routers.flatMap((r) => r.stack) });
  return group;
}

/**
 * Middleware run one after another as one layer of the app (the first error, or an answer, ends
 * the run). For the handful every request passes through before sign-in: Express would match,
 * trim and restore the path around each of them.
 */
export function series(handlers: readonly RequestHandler[]): RequestHandler {
  const inSeries: RequestHandler = (req, res, next) => {
    let i = 0;
    const step = (err?: unknown): void => {
      if (err) return next(err);
      const h = handlers[i++];
      if (!h) return next();
      try {
        const r = h(req, res, step) as unknown;
        if (r instanceof Promise) r.catch(next);
      } catch (e) {
        next(e);
      }
    };
    step();
  };
  return withStackOf(handlers, inSeries);
}

/** Looked through like one router holding the layers of the routers among `handlers` (route listings, the OpenAPI completeness test). */
function withStackOf(handlers: readonly RequestHandler[], fn: RequestHandler): RequestHandler {
  Object.defineProperty(fn, 'stack', { get: () => handlers.flatMap((h) => (h as unknown as { stack?: unknown[] }).stack ?? []) });
  return fn;
}

/** A router entered only by paths outside the given prefixes (the pages: never under /api/ or /internal/). */
export function except(prefixes: readonly string[], handler: RequestHandler): RequestHandler {
  return withStackOf([handler], function unlessPrefixed(req, res, next) {
    const path = req.path.toLowerCase();
    if (prefixes.some((p) => path.startsWith(p))) return next();
    return handler(req, res, next);
  });
}
