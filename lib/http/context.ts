import type { Request } from 'express';
import { requireSignedIn } from '../auth/index.js';
import type { Ctx, Deps } from '../context/index.js';

/** The service context of a signed-in request (401 api-100 without a principal). */
export function ctxOf(req: Request, deps: Deps): Ctx {
  return {
    ...deps,
    // One request's reads share a consistency point until it writes (Store.session).
    store: deps.store.session ? deps.store.session() : deps.store,
    log: req.log ?? deps.log,
    principal: requireSignedIn(req.principal),
    ip: req.ip ?? req.socket.remoteAddress ?? '',
    requestId: req.requestId ?? '',
  };
}
