import type { RequestHandler } from 'express';

// Middleware composed into one layer of the app. Express matches, trims and restores the path around
// every layer it tries; the handful every request passes through before sign-in are run as one.
// (Routers are mounted as they are: gating them by path prefix measured no gain on the list route,
// bench/README.md.)

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
