import type { RequestHandler, Router } from 'express';

// Express tries every layer of every router in turn. The api daemon mounts some twenty feature
// routers before the generic resource routes, each with its own routes, so a request for
// /api/mail/folders was matched against some 170 route patterns before reaching its own (about a
// tenth of the list route's CPU in the list benchmark). A gated router is entered only by requests
// whose path starts with one of its routes' literal prefixes.

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
    const paths = typeof raw === 'string' ? [raw] : Array.isArray(raw) && raw.every((p) => typeof p === 'string') ? (raw as string[]) : null;
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
 * The router behind a prefix check. The prefixes are worked out again whenever the router gained
 * layers (plugin routes), so a route added later is never skipped.
 */
export function gateByPrefix(router: Router): RequestHandler {
  let layers = -1;
  let prefixes: string[] | null = null;
  const gate: RequestHandler = function gatedRouter(req, res, next) {
    if (router.stack.length !== layers) {
      layers = router.stack.length;
      prefixes = prefixesOf(router);
    }
    if (prefixes) {
      const path = req.path.toLowerCase();
      if (!prefixes.some((p) => path.startsWith(p))) return next();
    }
    return router(req, res, next);
  };
  // Looked through like the router itself (its layers: route listings, the OpenAPI completeness test).
  Object.defineProperty(gate, 'stack', { get: () => router.stack });
  return gate;
}
